import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingProxy {
  url: string;
  /** Requests seen, as "METHOD /path" without the query string. */
  seen: string[];
  /** "METHOD /path STATUS" for every answered request, in the order the answers came. */
  answered: string[];
  count(match: (line: string) => boolean): number;
  close(): Promise<void>;
}

export interface CountingProxyOptions {
  /**
   * Reads the whole answer to the requests whose line ("METHOD /path") it matches: the body is
   * buffered and handed to `onBody` before it is forwarded. Other answers stream through.
   */
  inspect?: { match: RegExp; onBody(line: string, body: Buffer): void };
  /** Holds a request this many ms before forwarding it (a slow or hung upstream); 0 forwards at once. */
  delayMs?: (line: string) => number;
}

/** A pass-through HTTP proxy that records every request it forwards (streams included). */
export async function startCountingProxy(target: string, options: CountingProxyOptions = {}): Promise<CountingProxy> {
  const upstream = new URL(target);
  const seen: string[] = [];
  const answered: string[] = [];
  const held = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    const line = `${req.method} ${(req.url ?? '/').split('?')[0]}`;
    seen.push(line);
    const delayMs = options.delayMs?.(line) ?? 0;
    if (delayMs <= 0) {
      forwardRequest(req, res, line);
      return;
    }
    req.pause();
    const timer = setTimeout(() => {
      held.delete(timer);
      if (!res.destroyed) forwardRequest(req, res, line);
    }, delayMs);
    held.add(timer);
  });
  const forwardRequest = (req: IncomingMessage, res: ServerResponse, line: string) => {
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const { inspect } = options;
        if (!inspect?.match.test(line)) {
          answered.push(`${line} ${answer.statusCode}`);
          answer.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          inspect.onBody(line, body);
          answered.push(`${line} ${answer.statusCode}`);
          res.end(body);
        });
      },
    );
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    answered,
    count: (match) => seen.filter(match).length,
    async close() {
      held.forEach(clearTimeout);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
