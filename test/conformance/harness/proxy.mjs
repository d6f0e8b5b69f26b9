// Recording proxies in front of the coordinators: every request is recorded (which proxy, method,
// path, query, JSON body, when), and a scenario's faults may answer one in the coordinator's
// place or lose its answer. Streams (the event stream) pass through as they come.
import { createServer, request } from 'node:http';

/**
 * What the proxies saw, shared by both, and the faults of the scenario under way.
 * `fault(entry)` answers 'forward', `{delayMs}` (forward that much later), 'lose' (forward, then drop the connection before the
 * answer), or `{status, code, retryAfterSeconds}` (answered by the proxy, nothing forwarded).
 */
export class Traffic {
  entries = [];
  fault = () => 'forward';

  reset(fault = () => 'forward') {
    this.entries = [];
    this.fault = fault;
  }
}

/**
 * A proxy on `port` in front of `target`; `stop()` stops listening (connections refused),
 * `start(target)` listens again, in front of `target` when given.
 */
export async function startProxy(index, port, target, traffic) {
  let upstream = new URL(target);
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const [path, query = ''] = (req.url ?? '/').split('?');
      const entry = { proxy: index, method: req.method, path, query, body: parse(raw), at: Date.now(), fault: null };
      traffic.entries.push(entry);
      const answer = traffic.fault(entry);
      if (answer === 'forward' || answer === 'lose') {
        if (answer === 'lose') entry.fault = 'lose';
        forward(req, res, raw, answer === 'lose');
        return;
      }
      if (answer.delayMs !== undefined) {
        // The coordinator's answer held back: it comes, late.
        entry.fault = `late ${answer.delayMs} ms`;
        setTimeout(() => forward(req, res, raw, false), answer.delayMs);
        return;
      }
      entry.fault = `${answer.status} ${answer.code}`;
      const headers = { 'content-type': 'application/json' };
      if (answer.retryAfterSeconds !== undefined) headers['retry-after'] = String(answer.retryAfterSeconds);
      res.writeHead(answer.status, headers);
      res.end(JSON.stringify({ statusCode: answer.status, code: answer.code, message: `injected ${answer.code}` }));
    });
  });
  const forward = (req, res, raw, lose) => {
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
    // The coordinator is gone: so is the answer (the client sees the connection drop).
    onward.on('error', () => res.destroy());
    res.on('close', () => onward.destroy());
    onward.end(raw);
  };
  const listen = () =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen();
  let listening = true;
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      if (!listening) return;
      listening = false;
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
    async start(target) {
      if (target) upstream = new URL(target);
      if (listening) return;
      await listen();
      listening = true;
    },
  };
}

function parse(raw) {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return raw.toString('utf8');
  }
}
