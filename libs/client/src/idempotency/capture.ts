import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { StoredResponse } from '@sluice/protocol';
import type { HeldClaim, IdempotencyEngine } from './engine';

type Callback = (error?: Error | null) => void;
type Method = (...args: unknown[]) => unknown;
type WriteArgs = [chunk?: unknown, encoding?: BufferEncoding | Callback, callback?: Callback];

/**
 * Holds back what a handler sends on a Node response (status, headers, body), settles the claim
 * with it, and only then sends it: a client never sees a response that a retry could not replay,
 * unless the coordinator cannot be reached to store it (the work is done, so its response is sent,
 * and the completion is asked again while the lease holds).
 * Works under Express, Fastify and Nest alike, since all of them write to the Node response.
 * A body past the engine's limit is sent as it comes and the claim released.
 */
export function captureResponse(res: ServerResponse, claim: HeldClaim, engine: IdempotencyEngine): void {
  const original = { writeHead: res.writeHead, write: res.write, end: res.end };
  const call = (method: unknown, ...args: unknown[]) => (method as Method).apply(res, args);
  let head: { status: number; headers?: OutgoingHttpHeaders } | undefined;
  let headArgs: unknown[] | undefined;
  const chunks: Buffer[] = [];
  let bytes = 0;
  let passThrough = false;

  const restore = () => Object.assign(res, original);
  const flushHead = () => {
    if (headArgs) call(original.writeHead, ...headArgs);
  };
  const toBuffer = (chunk: unknown, encoding: unknown): Buffer | undefined => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined;
    if (Buffer.isBuffer(chunk)) return chunk;
    if (chunk instanceof Uint8Array) return Buffer.from(chunk);
    return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  };
  /** Past the limit: send what is held and let the rest through; the claim is released. */
  const giveUp = () => {
    passThrough = true;
    restore();
    flushHead();
    for (const chunk of chunks) call(original.write, chunk);
    chunks.length = 0;
    void claim.release(new Error(`the response passed ${engine.maxResponseBytes} bytes: sent, not stored`));
  };

  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    headArgs = [status, ...rest];
    const headers = rest.find((arg) => typeof arg === 'object' && arg !== null);
    head = { status, headers: Array.isArray(headers) ? undefined : (headers as OutgoingHttpHeaders | undefined) };
    return this;
  } as ServerResponse['writeHead'];

  res.write = function (this: ServerResponse, ...[chunk, encoding, callback]: WriteArgs) {
    const buffer = toBuffer(chunk, encoding);
    if (buffer) {
      chunks.push(buffer);
      bytes += buffer.length;
    }
    if (bytes > engine.maxResponseBytes) giveUp();
    const done = typeof encoding === 'function' ? encoding : callback;
    if (done) process.nextTick(done);
    return true;
  } as ServerResponse['write'];

  res.end = function (this: ServerResponse, ...[chunk, encoding, callback]: WriteArgs) {
    const buffer = toBuffer(chunk, encoding);
    const done = [chunk, encoding, callback].find((arg): arg is Callback => typeof arg === 'function');
    if (passThrough) return call(original.end, buffer, done);
    if (buffer) {
      chunks.push(buffer);
      bytes += buffer.length;
    }
    if (bytes > engine.maxResponseBytes) {
      giveUp();
      return call(original.end, undefined, done);
    }
    restore();
    const body = Buffer.concat(chunks);
    const response: StoredResponse = {
      status: head?.status ?? res.statusCode,
      headers: engine.storedHeaders({ ...res.getHeaders(), ...head?.headers }),
      body: body.toString('base64'),
      bodyEncoding: 'base64',
    };
    void claim.settle(response).finally(() => {
      flushHead();
      call(original.end, body, done);
    });
    return this;
  } as ServerResponse['end'];
}
