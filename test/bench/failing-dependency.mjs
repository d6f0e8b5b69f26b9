// A dependency whose calls all fail at once (503), for the client storms (`node
// failing-dependency.mjs <first attempts>`): it holds the first attempts (`sluice-attempt: 1`) until
// that many have come, or RELEASE_AFTER_MS after the first on a starved machine, then fails them
// together; later attempts fail at once. It counts what it received by `sluice-attempt`; `GET
// /received` answers those counts. Prints its URL on the first line of stdout; ends when stdin closes.
import { createServer } from 'node:http';

const RELEASE_AFTER_MS = 3000;
const expected = Number(process.argv[2] ?? 1);
const attempts = {};
let held = [];
let releaseTimer;

const fail = (response) => response.writeHead(503, { 'content-type': 'application/json' }).end('{}');
const release = () => {
  clearTimeout(releaseTimer);
  for (const response of held) fail(response);
  held = [];
};

const server = createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/received') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ attempts }));
    return;
  }
  request.resume();
  const attempt = request.headers['sluice-attempt'] ?? 'none';
  attempts[attempt] = (attempts[attempt] ?? 0) + 1;
  if (attempt !== '1' || attempts['1'] > expected) return fail(response);
  held.push(response);
  if (held.length === 1) releaseTimer = setTimeout(release, RELEASE_AFTER_MS);
  if (attempts['1'] === expected) release();
});
server.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}\n`);
});
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
