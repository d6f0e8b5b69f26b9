import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { parse } from 'yaml';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { runSluice, type SluiceEnv, type SluiceRun } from '../support/sluice-cli';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

jest.setTimeout(120_000);

const admin = bearer(ADMIN_TOKEN);

/** What the source coordinator stores, by namespace and target. */
const STORED: Record<string, Record<string, object>> = {
  shop: {
    default: { backoff: { baseMs: 100, capMs: 5000, jitter: 'decorrelated' } },
    'deps/payments-api': { mode: 'shadow', retryBudget: { maxAttempts: 2, ratio: 0.2 } },
    'deps/inventory': { concurrency: { leaseMs: 1000, limit: 5 } },
    'limits/checkout': { burst: 20, periodMs: 1000, rate: 100 },
    'queues/emails': { maxAttempts: 8 },
  },
  billing: { 'deps/ledger': { breaker: { failureRateThreshold: 0.25 } } },
};

/** The same as a policies file: what an export writes (names and fields in sorted order). */
const EXPORTED = {
  namespaces: {
    billing: { dependencies: { ledger: STORED.billing['deps/ledger'] } },
    shop: {
      default: STORED.shop.default,
      dependencies: { inventory: STORED.shop['deps/inventory'], 'payments-api': STORED.shop['deps/payments-api'] },
      limits: { checkout: STORED.shop['limits/checkout'] },
      queues: { emails: STORED.shop['queues/emails'] },
    },
  },
};

// `sluice policy export` and `import`, the built CLI against two coordinators on their own stores
// (two key prefixes of one Redis): a backup of one restores into the other, byte for byte, and a
// bad file changes nothing.
describe('sluice policy export and import', () => {
  let source: TestCoordinator;
  let target: TestCoordinator;
  let files: string;
  const env = (coordinator: TestCoordinator): SluiceEnv => ({ url: coordinator.url, token: ADMIN_TOKEN.secret });
  const sluice = (coordinator: TestCoordinator, ...args: string[]) => runSluice(env(coordinator), args);
  const ok = (run: SluiceRun) => {
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    return run.stdout;
  };
  const file = (name: string, content: unknown) => {
    const path = join(files, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };
  /** Everything the target stores and its audit log: what "nothing changed" compares. */
  const stateOf = async (coordinator: TestCoordinator) => ({
    exported: ok(await sluice(coordinator, 'policy', 'export')),
    audit: (await request(coordinator.server).get('/admin/v1/audit').set(admin).expect(200)).body.items.length,
  });

  beforeAll(async () => {
    const config = { tokens: [ADMIN_TOKEN, SHOP_TOKEN] };
    source = await testCoordinator({ redis: true, listen: true, label: 'cli-export', config });
    target = await testCoordinator({ redis: true, listen: true, label: 'cli-import', config });
    files = mkdtempSync(join(tmpdir(), 'sluice-policy-transfer-'));
    for (const [ns, documents] of Object.entries(STORED)) {
      for (const [path, document] of Object.entries(documents)) {
        await request(source.server).put(`/admin/v1/${ns}/policies/${path}`).set(admin).send(document).expect(200);
      }
    }
    // A namespace with state and no documents is left out of an export of every namespace.
    await request(source.server)
      .post('/v1/quiet/reports')
      .set(admin)
      .send({ reporter: 'pod-a', deps: [{ dep: 'x', requests: 1, successes: 1, failures: 0, slow: 0 }] })
      .expect(200);
  });
  afterAll(async () => {
    await source?.close();
    await target?.close();
  });

  it('exports every namespace; the backup imports into a fresh store, which exports the same bytes', async () => {
    const backup = join(files, 'backup.json');
    expect(ok(await sluice(source, 'policy', 'export', '--file', backup))).toBe(
      `exported 6 documents of 2 namespaces to ${backup}\n`,
    );
    const text = readFileSync(backup, 'utf8');
    expect(JSON.parse(text)).toEqual(EXPORTED);
    expect(text).toBe(`${JSON.stringify(EXPORTED, null, 2)}\n`);
    expect(ok(await sluice(source, 'policy', 'export'))).toBe(text);

    const imported = ok(await sluice(target, 'policy', 'import', '--file', backup)).split('\n');
    expect(imported).toEqual([
      'added billing deps/ledger: ETag "1"',
      'added shop default: ETag "1"',
      'added shop deps/inventory: ETag "1"',
      'added shop deps/payments-api: ETag "1"',
      'added shop limits/checkout: ETag "1"',
      'added shop queues/emails: ETag "1"',
      `imported ${backup}: added 6, replaced 0, deleted 0 and kept 0 unchanged`,
      '',
    ]);
    expect(ok(await sluice(target, 'policy', 'export'))).toBe(text);
    const audit = await request(target.server).get('/admin/v1/audit?ns=shop').set(admin).expect(200);
    expect(audit.body.items[0]).toMatchObject({ action: 'policy.put', actor: 'ops', reason: 'sluice policy import' });

    // Again: the same documents are left alone (no write, no new version, no audit entry).
    const before = await stateOf(target);
    expect(ok(await sluice(target, 'policy', 'import', '-f', backup))).toBe(
      `imported ${backup}: added 0, replaced 0, deleted 0 and kept 6 unchanged\n`,
    );
    expect(await stateOf(target)).toEqual(before);
  });

  it('writes a policies file a coordinator boots with', async () => {
    const exported = JSON.parse(ok(await sluice(source, 'policy', 'export')));
    const booted = await testCoordinator({ policies: exported, config: { tokens: [ADMIN_TOKEN] } });
    try {
      for (const [ns, documents] of Object.entries(STORED)) {
        const page = await request(booted.server).get(`/admin/v1/${ns}/policies`).set(admin).expect(200);
        const stored = Object.fromEntries(
          page.body.items.map((item: { target: string; document: object }) => [item.target, item.document]),
        );
        expect(stored).toEqual(documents);
      }
    } finally {
      await booted.close();
    }
  });

  it('exports one namespace, as YAML for a .yaml file or with --format yaml', async () => {
    const backup = join(files, 'shop.yaml');
    ok(await sluice(source, 'policy', 'export', 'shop', '-f', backup));
    const text = readFileSync(backup, 'utf8');
    expect(text.startsWith('namespaces:\n  shop:\n')).toBe(true);
    expect(parse(text)).toEqual({ namespaces: { shop: EXPORTED.namespaces.shop } });
    expect(ok(await sluice(source, 'policy', 'export', 'shop', '--format', 'yaml'))).toBe(text);
    expect(ok(await sluice(target, 'policy', 'import', '--dry-run', '-f', backup))).toBe(
      'would add 0, replace 0, delete 0 and keep 5 unchanged (dry run: nothing was changed)\n',
    );
    expect(JSON.parse(ok(await sluice(source, 'policy', 'export', 'nothing-here')))).toEqual({
      namespaces: { 'nothing-here': {} },
    });
  });

  it('shows each difference with --dry-run, asks before replacing or deleting, and prunes with --prune', async () => {
    const edited = structuredClone(EXPORTED) as {
      namespaces: { billing: object; shop: { dependencies: Record<string, object>; limits?: object } };
    };
    edited.namespaces.shop.dependencies['payments-api'] = {
      mode: 'enforce',
      retryBudget: { maxAttempts: 2, ratio: 0.2 },
    };
    edited.namespaces.shop.dependencies.search = { mode: 'shadow' };
    delete edited.namespaces.shop.limits;
    const path = file('edited.json', edited);
    const before = await stateOf(target);

    const dryRun = ok(await sluice(target, 'policy', 'import', '-f', path, '--dry-run', '--prune'));
    expect(dryRun).toMatch(/^replace shop deps\/payments-api \(stored ETag "1"\)$/m);
    expect(dryRun).toContain('-   "mode": "shadow",\n+   "mode": "enforce",');
    expect(dryRun).toMatch(/^add shop deps\/search\n\+ \{\n\+ {3}"mode": "shadow"\n\+ \}$/m);
    expect(dryRun).toMatch(/^delete shop limits\/checkout \(stored ETag "1"\)\n- \{$/m);
    expect(dryRun).toMatch(/would add 1, replace 1, delete 1 and keep 4 unchanged \(dry run: nothing was changed\)\n$/);
    const asJson = JSON.parse(ok(await sluice(target, '-o', 'json', 'policy', 'import', '-f', path, '--dry-run')));
    expect(asJson.dryRun).toBe(true);
    expect(asJson.steps.map((step: { target: string; action: string }) => `${step.action} ${step.target}`)).toEqual([
      'keep deps/ledger',
      'keep default',
      'keep deps/inventory',
      'replace deps/payments-api',
      'add deps/search',
      'keep queues/emails',
    ]);
    expect(await stateOf(target)).toEqual(before);

    // Replacing a stored document needs a yes; with no terminal to ask on, nothing is done at all.
    const refused = await sluice(target, 'policy', 'import', '-f', path);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/replaces or deletes 1 stored policy documents \(shop deps\/payments-api\)/);
    expect(refused.stderr).toContain('pass --yes');
    expect(await stateOf(target)).toEqual(before);

    const applied = ok(await sluice(target, 'policy', 'import', '-f', path, '--prune', '--yes', '--reason', 'restore'));
    expect(applied.split('\n')).toEqual([
      'replaced shop deps/payments-api: ETag "2"',
      'added shop deps/search: ETag "1"',
      'deleted shop limits/checkout',
      `imported ${path}: added 1, replaced 1, deleted 1 and kept 4 unchanged`,
      '',
    ]);
    expect(JSON.parse(ok(await sluice(target, 'policy', 'export')))).toEqual(edited);
  });

  it.each([
    ['text that is neither YAML nor JSON', '{"namespaces": {', /is neither YAML nor JSON/],
    ['a list', '[1, 2]', /the document must be a mapping/],
    [
      'a wrong value',
      { namespaces: { shop: { dependencies: { 'payments-api': { retryBudget: { ratio: 'lots' } } } } } },
      /namespaces\.shop\.dependencies\.payments-api\.retryBudget\.ratio: must be a number/,
    ],
    [
      'a wrong field of a document',
      { namespaces: { shop: { limits: { checkout: { rate: 1, periodMs: 1000, burst: 1, colour: 'red' } } } } },
      /namespaces\.shop\.limits\.checkout\.colour/,
    ],
    [
      'a wrong section',
      { namespaces: { shop: { dependecies: {} } } },
      /namespaces\.shop\.dependecies is not a known field/,
    ],
    ['a bad namespace name', { namespaces: { Shop: {} } }, /namespaces\.Shop must match/],
    [
      'one bad document among good ones',
      { namespaces: { shop: { dependencies: { fine: { mode: 'shadow' }, broken: { mode: 'loud' } } } } },
      /namespaces\.shop\.dependencies\.broken\.mode/,
    ],
  ])('refuses %s with exit 2, naming the field, and changes nothing', async (label, content, message) => {
    const before = await stateOf(target);
    const path = file(`bad-${label.replace(/\W+/g, '-')}.json`, content);
    const run = await sluice(target, 'policy', 'import', '-f', path, '--yes', '--prune');
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
    expect(run.stderr).toMatch(message);
    expect(run.stderr).not.toContain('    at ');
    expect(await stateOf(target)).toEqual(before);
  });

  it('refuses a file it cannot read, and a namespace the file does not name (exit 2)', async () => {
    const missing = await sluice(target, 'policy', 'import', '-f', join(files, 'nowhere.json'));
    expect({ code: missing.code, stderr: missing.stderr }).toEqual({
      code: 2,
      stderr: expect.stringMatching(/cannot read/),
    });
    const other = await sluice(target, 'policy', 'import', 'payroll', '-f', file('shop.json', EXPORTED));
    expect({ code: other.code, stderr: other.stderr }).toEqual({
      code: 2,
      stderr: expect.stringContaining('has no namespace "payroll"'),
    });
  });

  it('stops at a document the coordinator refuses, and says what it had done', async () => {
    // Valid as a policies file (backoff.capMs over the built-in baseMs of 50), but this coordinator's
    // own policies file raises baseMs to 5000, which a dependency's document is checked against.
    const strict = await testCoordinator({
      listen: true,
      policies: { default: { backoff: { baseMs: 5000, capMs: 10000 } }, namespaces: {} },
      config: { tokens: [ADMIN_TOKEN] },
    });
    try {
      const path = file('strict.json', {
        namespaces: { shop: { dependencies: { a: { mode: 'shadow' }, b: { backoff: { capMs: 3000 } } } } },
      });
      const run = await sluice(strict, 'policy', 'import', '-f', path);
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: '' });
      expect(run.stderr).toMatch(/^sluice: PUT admin\/v1\/shop\/policies\/deps\/b was refused \(400 validation_failed/);
      expect(run.stderr).toMatch(/^ {2}backoff\.capMs: /m);
      expect(run.stderr).toContain(
        'Stopped at shop deps/b, after 1 of 2 changes (added shop deps/a); run the import again to finish it.',
      );
      expect(JSON.parse(ok(await sluice(strict, 'policy', 'export', 'shop')))).toEqual({
        namespaces: { shop: { dependencies: { a: { mode: 'shadow' } } } },
      });
    } finally {
      await strict.close();
    }
  });

  it('imports one namespace of a file, and says which settings of a policies file it leaves to the file', async () => {
    const fresh = 'fresh';
    const path = file('with-file-settings.json', {
      default: { retryBudget: { ratio: 0.2 } },
      idempotency: { retentionSeconds: 3600 },
      namespaces: {
        [fresh]: { queueDefault: { maxAttempts: 3 }, dependencies: { api: { mode: 'shadow' } } },
        other: { dependencies: { api: { mode: 'shadow' } } },
      },
    });
    const run = await sluice(target, 'policy', 'import', fresh, '-f', path);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(
      'sluice: not imported: default, idempotency, namespaces.fresh.queueDefault (each instance reads these from ' +
        'its own SLUICE_POLICIES_FILE; the store does not hold them)\n',
    );
    expect(run.stdout).toContain(`imported ${path}: added 1, replaced 0, deleted 0 and kept 0 unchanged`);
    expect(JSON.parse(ok(await sluice(target, 'policy', 'export', fresh)))).toEqual({
      namespaces: { [fresh]: { dependencies: { api: { mode: 'shadow' } } } },
    });
    expect(JSON.parse(ok(await sluice(target, 'policy', 'export', 'other')))).toEqual({ namespaces: { other: {} } });
  });
});
