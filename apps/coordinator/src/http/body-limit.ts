/** Largest request body: defined with the other limits of the wire, in libs/protocol. */
export { BODY_LIMIT_BYTES } from '@sluice/protocol';
