import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the proxy does with one request: pass it on (`forward`), answer it itself with an error
 * (`{ status, code }`, the API's error body, and `Retry-After` when given), drop the connection
 * without passing it on (`drop`), or pass it on and drop the connection once the coordinator has
 * answered (`lose`: the change was made, the caller never hears of it).
 */
export type ProxyAnswer = 'forward' | 'drop' | 'lose' | { status: number; code: string; retryAfterSeconds?: number };

/** A request the proxy saw: "METHOD /path" (no query string), its JSON body, and what the script made of it. */
export interface SeenRequest {
  line: string;
  body: unknown;
  answer: string;
}

export interface ScriptedProxy {
  url: string;
  seen: SeenRequest[];
  /** The bodies of the requests whose line matches, in arrival order. */
  bodies(match: RegExp): Array<Record<string, unknown>>;
  /** Decides each request's fate; every request is forwarded until one is set. */
  script(decide: (line: string, body: unknown) => ProxyAnswer): void;
  close(): Promise<void>;
}

/** A 503 `overloaded` answer, as an instance past its capacity sheds a request. */
export const OVERLOADED: ProxyAnswer = { status: 503, code: 'overloaded', retryAfterSeconds: 1 };
/** A 503 `store_unavailable` answer, as an instance whose store does not answer. */
export const STORE_UNAVAILABLE: ProxyAnswer = { status: 503, code: 'store_unavailable', retryAfterSeconds: 1 };

/**
 * An HTTP proxy in front of a coordinator that reads every request body, records it, and forwards
 * it or answers on the coordinator's behalf as the script says (streams such as the event stream
 * are passed through as they come).
 */
export async function startScriptedProxy(target: string): Promise<ScriptedProxy> {
  const upstream = new URL(target);
  const seen: SeenRequest[] = [];
  let decide: (line: string, body: unknown) => ProxyAnswer = () => 'forward';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const line = `${req.method} ${(req.url ?? '/').split('?')[0]}`;
      const body = parse(raw);
      const answer = decide(line, body);
      seen.push({ line, body, answer: typeof answer === 'string' ? answer : `${answer.status} ${answer.code}` });
      if (answer === 'drop') {
        req.socket.destroy();
      } else if (answer === 'forward' || answer === 'lose') {
        forward(req, res, raw, answer === 'lose');
      } else {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (answer.retryAfterSeconds !== undefined) headers['retry-after'] = String(answer.retryAfterSeconds);
        res.writeHead(answer.status, headers);
        res.end(JSON.stringify({ statusCode: answer.status, code: answer.code, message: `scripted ${answer.code}` }));
      }
    });
  });
  const forward = (req: IncomingMessage, res: ServerResponse, raw: Buffer, lose: boolean) => {
    const onward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (lose) {
          answer.resume();
          answer.once('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    onward.on('error', () => res.destroy());
    res.on('close', () => onward.destroy());
    onward.end(raw);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    bodies: (match) =>
      seen.filter((entry) => match.test(entry.line)).map((entry) => (entry.body ?? {}) as Record<string, unknown>),
    script(next) {
      decide = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parse(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return raw.toString('utf8');
  }
}
