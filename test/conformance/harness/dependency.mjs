// The scripted dependency: answers each request as the scenario says and records what it got.
import { createServer } from 'node:http';

/**
 * A scenario's dependency script: per path, a list of answers (the nth request to that path gets
 * the nth answer, the last one repeats); `*` for any other path; `{gather: N}` holds the first N
 * requests of a path and answers them together. An answer is
 * `{status, headers, delayMs, body}` (default 200).
 */
export class ScriptedDependency {
  requests = [];
  script = {};
  perPath = new Map();
  gathered = new Map();
  held = new Set();

  reset(script = {}) {
    for (const timer of this.held) clearTimeout(timer);
    this.held.clear();
    this.requests = [];
    this.script = script;
    this.perPath = new Map();
    this.gathered = new Map();
  }

  async start() {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  async close() {
    this.reset();
    const closed = new Promise((resolve) => this.server.close(resolve));
    this.server.closeAllConnections();
    await closed;
  }

  handle(req, res) {
    req.resume();
    const path = (req.url ?? '/').split('?')[0];
    const headers = {};
    for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value[0] : value;
    const n = this.perPath.get(path) ?? 0;
    this.perPath.set(path, n + 1);
    this.requests.push({ method: req.method, path, headers, at: Date.now(), index: n });
    const rule = this.script[path] ?? this.script['*'];
    const answers = Array.isArray(rule) ? rule : (rule?.answers ?? [{ status: 200 }]);
    const answer = answers.length === 0 ? { status: 200 } : answers[Math.min(n, answers.length - 1)];
    const gather = Array.isArray(rule) ? undefined : rule?.gather;
    const respond = () => this.answer(res, answer);
    if (gather !== undefined && n < gather) {
      const waiting = this.gathered.get(path) ?? [];
      waiting.push(respond);
      this.gathered.set(path, waiting);
      if (waiting.length === gather) for (const send of waiting) send();
      return;
    }
    respond();
  }

  answer(res, { status = 200, headers = {}, delayMs = 0, body }) {
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'text/plain', ...headers });
      res.end(body ?? `status ${status}`);
    };
    if (delayMs <= 0) return send();
    const timer = setTimeout(() => {
      this.held.delete(timer);
      send();
    }, delayMs);
    this.held.add(timer);
  }
}
