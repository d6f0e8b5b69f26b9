import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { RedisServerProcess } from '../support/redis-server';
import { runSluice, startSluice, type SluiceEnv, type SluiceRun } from '../support/sluice-cli';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

jest.setTimeout(60_000);

// The built `sluice` run as an operator runs it, a process against a listening coordinator on
// Redis: every command, its JSON output parsed, and its exit code (0 done, 1 refused or failed,
// 2 bad usage).
describe('the sluice CLI', () => {
  let coordinator: TestCoordinator;
  let admin: SluiceEnv;
  let files: string;
  const sluice = (...args: string[]) => runSluice(admin, args);
  const json = async (...args: string[]) => {
    const run = await sluice('--output', 'json', ...args);
    expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: expect.any(String) });
    return JSON.parse(run.stdout);
  };
  const refused = (run: SluiceRun, stderr: RegExp) =>
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: expect.stringMatching(stderr) });
  const usage = (run: SluiceRun) => expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
  const file = (name: string, content: unknown) => {
    const path = join(files, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };
  const report = (ns: string, dep: string, requests = 20) =>
    request(coordinator.server)
      .post(`/v1/${ns}/reports`)
      .set(bearer(ADMIN_TOKEN))
      .send({ reporter: 'pod-a', deps: [{ dep, requests, successes: requests, failures: 0, slow: 0 }] })
      .expect(200);
  const fail = (messageId: string, attempt: number) =>
    request(coordinator.server)
      .post('/v1/shop/queues/emails/attempts')
      .set(bearer(SHOP_TOKEN))
      .send({ messageId, attempt, error: `smtp 421 (try ${attempt})`, payload: { to: `${messageId}@example.com` } })
      .expect(200);
  const breakers = async (ns: string) =>
    (await json('deps', ns)).items.map((item: { dependency: string; state: string }) => [item.dependency, item.state]);

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: true,
      listen: true,
      label: 'cli',
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN] },
    });
    admin = { url: coordinator.url, token: ADMIN_TOKEN.secret };
    files = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
    await report('shop', 'payments-api', 0); // known, with nothing counted: the listing test counts its own
    await report('shop', 'inventory');
    await report('billing', 'ledger');
  });
  afterAll(() => coordinator?.close());

  it('answers --help everywhere, with exit code 0', async () => {
    for (const args of [
      ['--help'],
      ['trip', '--help'],
      ['policy', 'put', '--help'],
      ['policy', 'export', '--help'],
      ['policy', 'import', '--help'],
      ['dlq', 'list', '--help'],
    ]) {
      const run = await sluice(...args);
      expect({ args, code: run.code, usage: run.stdout.startsWith('Usage: sluice') }).toEqual({
        args,
        code: 0,
        usage: true,
      });
    }
    expect((await sluice('--help')).stdout).toContain('Exit codes: 0 done; 1 refused or failed');
    expect((await sluice('dep', '--help')).stdout).toContain('the whole policy in effect');
  });

  it('refuses bad usage with exit code 2 and changes nothing', async () => {
    usage(await sluice());
    usage(await sluice('frobnicate'));
    usage(await sluice('trip', 'shop', 'payments-api'));
    usage(await sluice('trip', 'shop', 'payments-api', '--reason', 'x', '--for', '10 parsecs'));
    usage(await sluice('--output', 'yaml', 'namespaces'));
    usage(await sluice('policy', 'get', 'shop', 'limits/a/b'));
    usage(await sluice('policy', 'put', 'shop', 'payments-api', '--file', file('broken.json', '{"mode": ')));
    usage(await sluice('audit', '--since', 'last tuesday-ish'));
    const bad = await sluice('dlq', 'list', 'shop', 'emails', '--limit', '0');
    usage(bad);
    expect(bad.stderr).toContain('--limit');
    expect(await breakers('shop')).toEqual([
      ['inventory', 'closed'],
      ['payments-api', 'closed'],
    ]);
  });

  it('says plainly when the token is wrong, not an admin one, or the coordinator cannot be reached (exit 1)', async () => {
    refused(await runSluice({ ...admin, token: 'not-a-token' }, ['namespaces']), /401 unauthorized[\s\S]*SLUICE_TOKEN/);
    refused(await runSluice({ ...admin, token: undefined }, ['deps', 'shop']), /401 unauthorized/);
    refused(
      await runSluice({ ...admin, token: SHOP_TOKEN.secret }, ['trip', 'shop', 'inventory', '--reason', 'x']),
      /403 forbidden[\s\S]*admin token/,
    );
    refused(
      await runSluice({ url: 'http://127.0.0.1:9', token: ADMIN_TOKEN.secret }, ['namespaces']),
      /cannot reach the coordinator at http:\/\/127\.0\.0\.1:9/,
    );
  });

  it('lists the namespaces, their dependencies and one dependency', async () => {
    await report('shop', 'payments-api'); // within the budget and breaker windows of the checks below
    expect(await json('namespaces')).toEqual({
      items: [
        { namespace: 'billing', dependencies: 1 },
        { namespace: 'shop', dependencies: 2 },
      ],
    });
    const table = await sluice('namespaces');
    expect(table.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+DEPENDENCIES$/);

    const all = await json('deps');
    expect(
      all.items.map((row: { namespace: string; dependency: string }) => `${row.namespace}/${row.dependency}`),
    ).toEqual(['billing/ledger', 'shop/inventory', 'shop/payments-api']);
    expect(all.items[2]).toEqual({
      namespace: 'shop',
      dependency: 'payments-api',
      state: 'closed',
      since: null,
      openUntil: null,
      reason: null,
      retries: 0,
      retriesSucceeded: 0,
      limit: 102, // floor(0.1 × 20 requests + 10 retries/s × 10 s)
      cap: 110, // floor(0.5 × 20 requests + 10 retries/s × 10 s)
      exhausted: false,
    });
    expect(await json('deps', '--open')).toEqual({ items: [] });

    const view = await json('dep', 'shop', 'payments-api');
    expect(view).toMatchObject({
      namespace: 'shop',
      dependency: 'payments-api',
      breaker: { state: 'closed', calls: 20, failureRate: 0, reason: null },
      budget: { mode: 'adaptive', requests: 20, limit: 102, retriesSucceeded: 0, cap: 110 },
      policy: { mode: 'enforce' },
    });
    const shown = (await sluice('dep', 'shop', 'payments-api')).stdout;
    expect(shown).toMatch(/^breaker\s+closed$/m);
    expect(shown).toMatch(/^budget\s+adaptive: 0 succeeded, cap 110$/m);
    // The whole policy in effect, as `policy get` prints it: budget, backoff, breaker, limits.
    const policy = shown.slice(shown.indexOf('\npolicy in effect'));
    expect(policy).toMatch(
      /^\npolicy in effect \(its own document, over the namespace default, over the defaults\):\n\{/,
    );
    expect(JSON.parse(policy.slice(policy.indexOf('{')))).toEqual(view.policy);
    for (const field of ['"maxAttempts": 3', '"failureRateThreshold": 0.5', '"capMs": 2000', '"rateLimit": null']) {
      expect(policy).toContain(field);
    }
    expect((await sluice('deps', 'shop')).stdout.split('\n')[0]).toMatch(/\sRETRIES\s+SUCCEEDED\s+CAP\s/);
  });

  it('trips, force-closes and resets a breaker, with the reason in its view and the audit log', async () => {
    const tripped = await json('trip', 'shop', 'payments-api', '--reason', 'bad deploy', '--for', '10m');
    expect(tripped).toEqual({
      dependency: 'payments-api',
      state: 'forced_open',
      since: expect.any(Number),
      openUntil: tripped.since + 600_000,
      reason: 'bad deploy',
      known: true,
    });
    expect(await json('deps', 'shop', '--open')).toMatchObject({
      items: [{ dependency: 'payments-api', state: 'forced_open', reason: 'bad deploy' }],
    });
    expect(await json('force-close', 'shop', 'payments-api', '--reason', 'keep calling')).toMatchObject({
      state: 'forced_closed',
      openUntil: null,
      reason: 'keep calling',
      known: true,
    });
    expect(await json('reset', 'shop', 'payments-api', '--reason', 'fixed')).toMatchObject({
      state: 'closed',
      reason: null,
    });
    const log = await json('audit', '--ns', 'shop', '--since', '1h');
    expect(log.items.map((entry: { action: string; reason: string }) => [entry.action, entry.reason])).toEqual([
      ['breaker.trip', 'bad deploy'],
      ['breaker.force_close', 'keep calling'],
      ['breaker.reset', 'fixed'],
    ]);
    expect(log.items[0]).toMatchObject({ actor: 'ops', namespace: 'shop', target: 'payments-api' });
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect(await json('audit', '--ns', 'shop', '--since', future)).toEqual({ items: [] });
    expect(log.items[0]).toMatchObject({ durationMs: 600_000, endsAt: tripped.openUntil });
    expect(log.items[1]).toMatchObject({ durationMs: null, endsAt: null });
    const printed = (await sluice('audit', '--ns', 'shop')).stdout;
    expect(printed.split('\n')[0]).toMatch(/\sTARGET\s+FOR\s+UNTIL\s+REASON$/);
    const until = new Date(tripped.openUntil).toISOString().replace(/\./g, '\\.');
    expect(printed).toMatch(new RegExp(`breaker\\.trip\\s+shop\\s+payments-api\\s+10m\\s+${until}\\s+bad deploy`));
    expect(printed).toMatch(/breaker\.force_close\s+shop\s+payments-api\s+until reset\s+-\s+keep calling/);
  });

  it('asks before tripping a dependency no caller has used, refuses without a terminal, and trips with --yes', async () => {
    const asked = await sluice('trip', 'shop', 'payments-apii', '--reason', 'bad deploy');
    refused(asked, /No caller has reported or asked for "payments-apii"[\s\S]*pass --yes/);
    expect(asked.stdout).toBe('');
    expect(await breakers('shop')).not.toContainEqual(['payments-apii', expect.any(String)]);
    expect((await json('audit', '--ns', 'shop')).items).not.toContainEqual(
      expect.objectContaining({ target: 'payments-apii' }),
    );

    const forced = await json('trip', 'shop', 'payments-apii', '--reason', 'on purpose', '--yes');
    expect(forced).toMatchObject({ dependency: 'payments-apii', state: 'forced_open', known: false });
    // Listed now (an operator's action holds it), yet still unknown to callers: tripped, and said so.
    const again = await sluice('trip', 'shop', 'payments-apii', '--reason', 'again');
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('warning: no caller has reported or asked for "payments-apii"');
    expect(again.stdout).toMatch(/^known\s+no: no caller has used it within a day$/m);
    expect((await json('reset', 'shop', 'payments-apii')).state).toBe('closed');
  });

  it('gets, puts and diffs a policy with its ETag; a stale ETag is refused and shows the newer version', async () => {
    // Nothing stored is not a failure: the policy in effect is shown instead.
    const none = await sluice('policy', 'get', 'shop', 'inventory');
    expect({ code: none.code, stderr: none.stderr }).toEqual({ code: 0, stderr: '' });
    expect(none.stdout).toMatch(
      /^namespace shop stores no document for deps\/inventory: it follows the defaults\. In effect:\n\{/,
    );
    expect(await json('policy', 'get', 'shop', 'inventory')).toMatchObject({
      etag: null,
      document: null,
      effective: { mode: 'enforce', retryBudget: expect.objectContaining({ ratio: expect.any(Number) }) },
    });
    const first = await json(
      'policy',
      'put',
      'shop',
      'deps/inventory',
      '--file',
      file('v1.json', { mode: 'shadow' }),
      '--reason',
      'try it',
    );
    expect(first).toEqual({ etag: expect.stringMatching(/^"\d+"$/), document: { mode: 'shadow' } });
    expect(await json('policy', 'get', 'shop', 'inventory')).toEqual(first);

    const second = await json(
      'policy',
      'put',
      'shop',
      'inventory',
      '-f',
      file('v2.json', { mode: 'enforce' }),
      '--if-match',
      first.etag,
    );
    expect(second.etag).not.toBe(first.etag);

    const stale = await sluice(
      'policy',
      'put',
      'shop',
      'inventory',
      '-f',
      file('v3.json', { mode: 'shadow', backoff: { baseMs: 10 } }),
      '--if-match',
      first.etag,
    );
    refused(stale, /412 precondition_failed[\s\S]*nothing was stored/);
    expect(stale.stderr).toContain(`The stored version is now ETag ${second.etag}`);
    expect(stale.stderr).toContain('-   "mode": "enforce"');
    expect(stale.stderr).toContain('+   "mode": "shadow"');
    const staleJson = await runSluice(admin, [
      '-o',
      'json',
      'policy',
      'put',
      'shop',
      'inventory',
      '-f',
      join(files, 'v3.json'),
      '--if-match',
      first.etag,
    ]);
    expect(staleJson.code).toBe(1);
    expect(JSON.parse(staleJson.stdout)).toMatchObject({
      error: 'precondition_failed',
      current: { etag: second.etag, document: { mode: 'enforce' } },
    });
    expect(await json('policy', 'get', 'shop', 'inventory')).toEqual(second);

    const diff = await json('policy', 'diff', 'shop', 'inventory', '-f', join(files, 'v3.json'));
    expect(diff.same).toBe(false);
    expect(diff.changes.filter((line: { op: string }) => line.op !== ' ')).toEqual([
      { op: '-', line: '  "mode": "enforce"' },
      { op: '+', line: '  "backoff": {' },
      { op: '+', line: '    "baseMs": 10' },
      { op: '+', line: '  },' },
      { op: '+', line: '  "mode": "shadow"' },
    ]);
    expect(await json('policy', 'diff', 'shop', 'inventory', '-f', join(files, 'v2.json'))).toMatchObject({
      same: true,
    });
    expect((await sluice('policy', 'diff', 'shop', 'inventory', '-f', join(files, 'v2.json'))).stdout).toBe(
      'no differences\n',
    );
    const invalid = await sluice('policy', 'put', 'shop', 'inventory', '-f', file('bad.json', { mode: 'maybe' }));
    refused(invalid, /400 validation_failed[\s\S]*mode/);
  });

  it('lists, shows, redrives and purges dead letters', async () => {
    for (const message of ['m-1', 'm-2']) for (let attempt = 1; attempt <= 5; attempt++) await fail(message, attempt);
    // Where to look, without knowing a queue's name.
    expect(await json('dlq', 'queues', 'shop')).toEqual({
      items: [{ queue: 'emails', deadLetters: 2, lastDeadLetteredAt: expect.any(Number) }],
      next: null,
    });
    expect((await sluice('dlq', 'queues', 'shop')).stdout).toMatch(
      /^QUEUE\s+DEAD LETTERS\s+LAST PARKED\nemails\s+2\s+20/,
    );
    const page = await json('dlq', 'list', 'shop', 'emails');
    expect(page).toEqual({
      items: [
        expect.objectContaining({ id: 'm-1', attempts: 5, error: 'smtp 421 (try 5)' }),
        expect.objectContaining({ id: 'm-2', attempts: 5 }),
      ],
      next: null,
    });
    const first = await json('dlq', 'list', 'shop', 'emails', '--limit', '1');
    expect(first.items.map((entry: { id: string }) => entry.id)).toEqual(['m-1']);
    expect((await json('dlq', 'list', 'shop', 'emails', '--limit', '1', '--cursor', first.next)).items[0].id).toBe(
      'm-2',
    );

    expect(await json('dlq', 'show', 'shop', 'emails', 'm-2')).toMatchObject({
      id: 'm-2',
      payload: { to: 'm-2@example.com' },
      error: 'smtp 421 (try 5)',
    });
    refused(await sluice('dlq', 'show', 'shop', 'emails', 'm-9'), /holds no dead letter "m-9"/);

    expect(await json('dlq', 'redrive', 'shop', 'emails', 'm-1')).toMatchObject({
      id: 'm-1',
      payload: { to: 'm-1@example.com' },
    });
    refused(await sluice('dlq', 'redrive', 'shop', 'emails', 'm-1'), /404 not_found/);

    refused(await sluice('dlq', 'purge', 'shop', 'emails', 'm-2'), /Delete dead letter "m-2"[\s\S]*pass --yes/);
    expect((await json('dlq', 'list', 'shop', 'emails')).items.map((entry: { id: string }) => entry.id)).toEqual([
      'm-2',
    ]);
    expect(await json('dlq', 'purge', 'shop', 'emails', 'm-2', '--yes')).toEqual({ purged: 'm-2' });
    expect(await json('dlq', 'list', 'shop', 'emails')).toEqual({ items: [], next: null });
    expect((await sluice('dlq', 'queues', 'shop')).stdout).toBe('(no queue holds dead letters)\n');
    const actions = (await json('audit', '--ns', 'shop')).items.map((entry: { action: string }) => entry.action);
    expect(actions.slice(-2)).toEqual(['dead_letter.redrive', 'dead_letter.purge']);
  });

  it('watches breaker changes live: a trip made by another command shows up, with its reason', async () => {
    const watch = startSluice(admin, ['watch', 'shop', '--output', 'json']);
    try {
      const initial = JSON.parse(await watch.nextLine((line) => line.includes('"dep":"inventory"')));
      expect(initial).toEqual({
        namespace: 'shop',
        dep: 'inventory',
        state: 'closed',
        since: null, // it never left closed
        openUntil: null,
        reason: null,
      });
      expect(watch.stderr()).toContain('watching the breakers of shop');
      await json('trip', 'shop', 'inventory', '--reason', 'warehouse db failover', '--for', '5m');
      const change = JSON.parse(await watch.nextLine((line) => line.includes('forced_open')));
      expect(change).toEqual({
        namespace: 'shop',
        dep: 'inventory',
        state: 'forced_open',
        since: expect.any(Number),
        openUntil: change.since + 300_000,
        reason: 'warehouse db failover',
      });
      await json('reset', 'shop', 'inventory');
      await watch.nextLine(
        (line) => line.includes('"dep":"inventory"') && line.includes('"state":"closed"') && line !== watch.lines[0],
      );
    } finally {
      expect(await watch.stop('SIGINT')).toBe(0);
    }
    const table = startSluice(admin, ['watch', 'shop', '--deps', 'payments-api']);
    try {
      expect(await table.nextLine((line) => line.includes('shop/payments-api'))).toMatch(
        /shop\/payments-api {2}closed/,
      );
    } finally {
      await table.stop('SIGTERM');
    }
    const denied = await runSluice({ ...admin, token: 'not-a-token' }, ['watch', 'shop']);
    refused(denied, /401 unauthorized/);
  });
});

describe('the sluice CLI while the store does not answer', () => {
  const redis = new RedisServerProcess();
  let coordinator: TestCoordinator;

  beforeAll(async () => {
    await redis.start();
    coordinator = await testCoordinator({
      redis: redis.url,
      listen: true,
      label: 'cli-store-down',
      config: { tokens: [ADMIN_TOKEN], storeTimeoutMs: 300 },
    });
  });
  afterAll(async () => {
    redis.resume();
    await coordinator?.close();
    await redis.stop();
  });

  it('says the store is not answering and that nothing changed (exit 1)', async () => {
    redis.pause();
    try {
      const run = await runSluice({ url: coordinator.url, token: ADMIN_TOKEN.secret }, [
        'trip',
        'shop',
        'a',
        '--reason',
        'x',
      ]);
      expect({ code: run.code, stderr: run.stderr }).toEqual({
        code: 1,
        stderr: expect.stringMatching(
          /503 store_unavailable[\s\S]*store \(Redis\) is not answering, so nothing was read or changed/,
        ),
      });
    } finally {
      redis.resume();
    }
  });
});
