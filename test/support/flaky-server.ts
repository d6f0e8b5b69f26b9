import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the flaky server does with one request: answer (after an optional delay), hang until the
 * client gives up, or drop the connection.
 */
export type Behaviour =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  | { hang: true }
  | { drop: true };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The client closed the connection before an answer was sent. */
  aborted: boolean;
  receivedAt: number;
}

export interface FlakyServer {
  url: string;
  requests: RecordedRequest[];
  /** Behaviours for the next requests, in order; then `fallback`. */
  plan(behaviours: Behaviour[], fallback?: Behaviour): void;
  /** Resolves once `n` requests have arrived. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const ok = (body = 'ok', delayMs = 0): Behaviour => ({ status: 200, body, delayMs });
export const fail = (status = 503, headers: Record<string, string> = {}): Behaviour => ({
  status,
  headers,
  body: 'no',
});

/** A real HTTP server on loopback that fails, times out, sends 429 with Retry-After, and recovers on cue. */
export async function startFlakyServer(): Promise<FlakyServer> {
  const requests: RecordedRequest[] = [];
  let queue: Behaviour[] = [];
  let fallback: Behaviour = ok();
  const waiters = new Set<() => void>();
  const open = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      aborted: false,
      receivedAt: Date.now(),
    };
    requests.push(record);
    waiters.forEach((wake) => wake());
    const behaviour = queue.shift() ?? fallback;
    res.on('close', () => {
      open.delete(res);
      if (!res.writableFinished) record.aborted = true;
    });
    open.add(res);
    req.resume();
    if ('hang' in behaviour) return;
    if ('drop' in behaviour) {
      req.socket.destroy();
      return;
    }
    const answer = () => {
      if (res.destroyed) return;
      res.writeHead(behaviour.status, { 'content-type': 'text/plain', ...behaviour.headers });
      res.end(behaviour.body ?? '');
    };
    if (behaviour.delayMs) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        answer();
      }, behaviour.delayMs);
      timers.add(timer);
    } else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    plan(behaviours, next = fallback) {
      queue = [...behaviours];
      fallback = next;
    },
    waitForRequests(n, timeoutMs = 5000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (requests.length < n) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`only ${requests.length} of ${n} requests arrived`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      timers.forEach(clearTimeout);
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
