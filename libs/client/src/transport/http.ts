// Namespace imports: the published .d.ts then needs no esModuleInterop of its users.
import * as http from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import * as https from 'node:https';
import type { Socket } from 'node:net';
import { timeoutAfterPendingReads, type PendingReadsTimer } from '@sluice/core';

/** Raised when the TCP (or TLS) connection is not made within the connect timeout. */
export class ConnectTimeoutError extends Error {
  readonly code = 'SLUICE_CONNECT_TIMEOUT';

  constructor(readonly timeoutMs: number) {
    super(`no connection within ${timeoutMs} ms`);
    this.name = 'ConnectTimeoutError';
  }
}

/** Raised when no response head arrives within the time given. */
export class HeadTimeoutError extends Error {
  readonly code = 'SLUICE_HEAD_TIMEOUT';

  constructor(readonly timeoutMs: number) {
    super(`no response within ${timeoutMs} ms`);
    this.name = 'HeadTimeoutError';
  }
}

/** Keep-alive agents for http and https, owned by one Sluice instance. */
export class Agents {
  readonly http = new http.Agent({ keepAlive: true, maxSockets: 256 });
  readonly https = new https.Agent({ keepAlive: true, maxSockets: 256 });
  /** Set by destroy(): the client is closed, and a request it cut off is not sent again. */
  destroyed = false;

  destroy(): void {
    this.destroyed = true;
    this.http.destroy();
    this.https.destroy();
  }
}

export interface SendOptions {
  method: string;
  headers: OutgoingHttpHeaders;
  body?: Uint8Array | string;
  signal?: AbortSignal;
  /** Longest the connection may take to open; the request fails with ConnectTimeoutError past it. */
  connectTimeoutMs?: number;
  /** Longest until the response head arrives; the request fails with HeadTimeoutError past it. */
  headTimeoutMs?: number;
  agents: Agents;
  /**
   * Send once more a request reset on a reused keep-alive connection before any answer (see
   * {@link send}). For the coordinator's exchanges; a caller's own request is the retry policy's.
   */
  resendOnStaleConnection?: boolean;
}

/** Resets of a request written on a kept-alive connection the server had already closed. */
const staleConnectionResets = new WeakSet<object>();

/**
 * Sends one request with `node:http(s)` and resolves with the response head (the body still to be
 * read). An abort destroys the request with the signal's reason, so the caller sees that reason.
 *
 * With `resendOnStaleConnection`, a request written on a reused keep-alive connection that fails
 * with a reset before any answer (how a server's idle timeout meets a request: it read nothing)
 * is sent once more, on another connection, within what is left of the head timeout (the retry
 * Node's documentation gives for `request.reusedSocket`).
 */
export async function send(url: URL, options: SendOptions): Promise<IncomingMessage> {
  if (!options.resendOnStaleConnection) return sendOnce(url, options);
  const startedAt = Date.now();
  try {
    return await sendOnce(url, options);
  } catch (error) {
    if (!staleConnectionResets.has(error as object) || options.signal?.aborted || options.agents.destroyed) throw error;
    const left = options.headTimeoutMs === undefined ? undefined : options.headTimeoutMs - (Date.now() - startedAt);
    if (left !== undefined && left < 1) throw error;
    return sendOnce(url, { ...options, headTimeoutMs: left });
  }
}

function sendOnce(url: URL, options: SendOptions): Promise<IncomingMessage> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const secure = url.protocol === 'https:';
  return new Promise<IncomingMessage>((resolve, reject) => {
    const request = (secure ? https : http).request(url, {
      method: options.method,
      headers: options.headers,
      agent: secure ? options.agents.https : options.agents.http,
    });
    // Both timeouts let what arrived meanwhile be read first: a busy event loop is not a slow peer.
    let connectTimer: PendingReadsTimer | undefined;
    const headTimeoutMs = options.headTimeoutMs;
    const headTimer =
      headTimeoutMs === undefined
        ? undefined
        : timeoutAfterPendingReads(headTimeoutMs, () => request.destroy(new HeadTimeoutError(headTimeoutMs)));
    const onAbort = () => request.destroy(signal!.reason);
    const cleanup = () => {
      connectTimer?.cancel();
      headTimer?.cancel();
      signal?.removeEventListener('abort', onAbort);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (options.connectTimeoutMs !== undefined) {
      const timeoutMs = options.connectTimeoutMs;
      request.once('socket', (socket: Socket) => {
        if (!socket.connecting) return;
        connectTimer = timeoutAfterPendingReads(timeoutMs, () => request.destroy(new ConnectTimeoutError(timeoutMs)));
        socket.once(secure ? 'secureConnect' : 'connect', () => connectTimer?.cancel());
      });
    }
    request.once('response', (response) => {
      cleanup();
      // The body stream outlives this call: an abort from now on ends it with the signal's reason.
      if (signal) {
        const onBodyAbort = () => response.destroy(signal.reason);
        signal.addEventListener('abort', onBodyAbort, { once: true });
        response.once('close', () => signal.removeEventListener('abort', onBodyAbort));
      }
      resolve(response);
    });
    request.once('error', (error: NodeJS.ErrnoException) => {
      cleanup();
      if (request.reusedSocket && error.code === 'ECONNRESET') staleConnectionResets.add(error);
      reject(error);
    });
    request.end(options.body);
  });
}

/** Reads a whole body (aborting with the stream's error). */
export async function readBody(response: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
