import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError, validationFailed } from '../common/api-error';

/**
 * What a write requires of the stored document (RFC 9110 §13.1):
 * - `none`: nothing (no precondition header);
 * - `exists`: `If-Match: *`, a document must exist;
 * - `version`: `If-Match: "<version>"` (or a list), the document must have one of these versions;
 *   entity tags that are not ours (weak ones, or not a version) never match;
 * - `absent`: `If-None-Match: *`, no document may exist (create only).
 */
export type Precondition =
  { type: 'none' } | { type: 'exists' } | { type: 'version'; versions: number[] } | { type: 'absent' };

/** `*` or a comma-separated list of entity tags (`"…"` or `W/"…"`). */
const ENTITY_TAG = String.raw`(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"`;
const ENTITY_TAG_LIST = new RegExp(String.raw`^\s*${ENTITY_TAG}(?:\s*,\s*${ENTITY_TAG})*\s*$`);
const TAGS = new RegExp(ENTITY_TAG, 'g');
const OUR_TAG = /^"([1-9]\d{0,14})"$/;

/** Reads `If-Match` / `If-None-Match`; a malformed header is a 400 naming it. */
export function parsePrecondition(headers: Record<string, string | string[] | undefined>): Precondition {
  const ifMatch = single(headers['if-match']);
  const ifNoneMatch = single(headers['if-none-match']);
  if (ifMatch !== undefined && ifNoneMatch !== undefined) {
    throw invalid('if-none-match', 'send either If-Match or If-None-Match, not both');
  }
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() !== '*') throw invalid('if-none-match', 'only * is supported on writes (create only)');
    return { type: 'absent' };
  }
  if (ifMatch === undefined) return { type: 'none' };
  if (ifMatch.trim() === '*') return { type: 'exists' };
  if (!ENTITY_TAG_LIST.test(ifMatch)) {
    throw invalid('if-match', 'must be * or an entity tag from an ETag header, e.g. "3"');
  }
  const versions = (ifMatch.match(TAGS) ?? []).flatMap((tag) => {
    const version = OUR_TAG.exec(tag)?.[1];
    return version === undefined ? [] : [Number(version)];
  });
  return { type: 'version', versions };
}

/** The write precondition of this request, from its `If-Match` / `If-None-Match` headers. */
export const WritePrecondition = createParamDecorator((_data: unknown, context: ExecutionContext): Precondition =>
  parsePrecondition(context.switchToHttp().getRequest<FastifyRequest>().headers),
);

/** 412 precondition_failed; names the header and, when there is a document, its current ETag. */
export function preconditionFailed(precondition: Precondition, currentVersion: number | undefined): ApiError {
  const field = precondition.type === 'absent' ? 'if-none-match' : 'if-match';
  const message =
    currentVersion === undefined
      ? 'there is no such policy document'
      : precondition.type === 'absent'
        ? `the policy document already exists (ETag "${currentVersion}")`
        : `the policy document has changed (its ETag is now "${currentVersion}")`;
  return new ApiError(
    412,
    'precondition_failed',
    message,
    [{ field, message }],
    currentVersion === undefined ? {} : { etag: `"${currentVersion}"` },
  );
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function invalid(field: string, message: string): ApiError {
  return validationFailed([{ field, message }]);
}
