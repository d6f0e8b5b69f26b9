// A service that calls a dependency through the BUILT SDK (npm run build: dist/libs/client/src),
// for the console's browser test (test/browser/console.test.ts).
//
//   node calling-service.mjs <coordinatorUrl> <clientToken> <namespace> <dependency>
//
// It serves the dependency itself (a node:http server answering 200) and calls it through
// `sluice.dependency(<dependency>).fetch` every 100 ms, printing one JSON line per call:
// {"event":"call","ok":true} or {"event":"call","ok":false,"error":{…what the error carries…}}.
// It ends when its stdin closes (the test went away) or after a watchdog.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Sluice } = require('../../../dist/libs/client/src/index.js');

const WATCHDOG_MS = 180_000;
const CALL_EVERY_MS = 100;
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
setTimeout(() => process.exit(3), WATCHDOG_MS).unref();

const [coordinatorUrl, token, namespace, dependencyName] = process.argv.slice(2);
const server = createServer((_request, response) => response.end('ok'));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const target = `http://127.0.0.1:${server.address().port}/`;

const sluice = new Sluice({ baseUrls: [coordinatorUrl], token, namespace, logger: false, reportIntervalMs: 100 });
const dependency = sluice.dependency(dependencyName);
emit({ event: 'started', target });

for (;;) {
  try {
    const response = await dependency.fetch(target);
    await response.text();
    emit({ event: 'call', ok: true });
  } catch (error) {
    emit({
      event: 'call',
      ok: false,
      error: {
        name: error?.constructor?.name,
        message: String(error?.message ?? error),
        isBreakerOpenError: error?.isBreakerOpenError === true,
        state: error?.state,
        operatorReason: error?.operatorReason,
      },
    });
  }
  await new Promise((resolve) => setTimeout(resolve, CALL_EVERY_MS));
}
