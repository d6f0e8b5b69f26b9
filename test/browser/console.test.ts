import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { findFreePorts } from '../support/ports';
import { RedisServerProcess } from '../support/redis-server';
import type { TokenDefinition } from '../../apps/coordinator/src/config/tokens';
import { testCoordinator } from '../support/test-coordinator';
import { launchBrowser, openTab, screenshot } from './support/browser';
import { SdkCaller } from './support/sdk-caller';

// The operators' console in a real headless Chromium, against two built coordinators on one
// (private) Redis and a service process calling a dependency through the built SDK.

jest.setTimeout(60_000);

const ADMIN = 'console-admin-secret-0001';
const CLIENT = 'console-client-secret-0001';
const TOKENS = [
  { id: 'ops-alice', secret: ADMIN, role: 'admin', namespaces: ['*'] },
  { id: 'checkout', secret: CLIENT, role: 'client', namespaces: ['shop'] },
];
/** How long the page may take to show what a test waits for: generous, as the full suite shares 2 cores with it. */
const UI_TIMEOUT_MS = 20_000;

/** What the tests read in the page (the repository's TypeScript has no DOM types). */
interface PageGlobals {
  sessionStorage: { length: number; getItem(key: string): string | null };
  notReloaded?: boolean;
  document: { documentElement: { scrollWidth: number } };
  innerWidth: number;
}

describe('the console at /console', () => {
  let redis: RedisServerProcess;
  let a: CoordinatorProcess;
  let b: CoordinatorProcess;
  let caller: SdkCaller;
  let browser: Browser | undefined;
  let launching: Promise<Browser> | undefined;
  let pageA: Page;
  let pageB: Page;
  const pageErrors: string[] = [];

  /** The admin API, as another operator's script would call it. */
  const admin = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${a.url}${url}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url} answered ${response.status}: ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };

  const signIn = async (page: Page, url: string, token: string) => {
    await page.goto(`${url}/console`);
    await page.getByLabel('Admin token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  const row = (page: Page, dependency: string) => page.locator(`table.data tr[data-key="${dependency}"]`);

  beforeAll(async () => {
    redis = await RedisServerProcess.start();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-console-'));
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify(TOKENS));
    const env = {
      SLUICE_REDIS_URL: redis.url,
      SLUICE_TOKENS_FILE: join(dir, 'tokens.json'),
      SLUICE_SSE_HEARTBEAT_MS: '1000',
      SLUICE_STORE_TIMEOUT_MS: '500',
    };
    const [portA, portB] = await findFreePorts(2);
    // The coordinators one after the other (each boot is CPU-bound), the browser meanwhile;
    // whatever started is stopped by afterAll, even when another part failed.
    launching = launchBrowser().then((started) => (browser = started));
    launching.catch(() => undefined);
    a = await startCoordinatorProcess(portA, env);
    b = await startCoordinatorProcess(portB, env);
    const started = await launching;
    // The service calls payments-api through instance B; its reports make the dependency known.
    caller = new SdkCaller(b.url, CLIENT, 'shop', 'payments-api');
    await caller.nextCall(0, (call) => call.ok);
    // A limited dependency with one call in flight: a lease held, one token of its burst taken.
    await admin('PUT', '/admin/v1/shop/policies/deps/inventory', {
      rateLimit: { rate: 10, periodMs: 3_600_000, burst: 10 },
      concurrency: { limit: 3, leaseMs: 600_000 },
    });
    await admin('POST', '/v1/shop/deps/inventory/admit', {});
    // A dead letter: a queue that parks a message at its second failed delivery.
    await admin('PUT', '/admin/v1/shop/policies/queues/emails', { maxAttempts: 2 });
    for (const attempt of [1, 2]) {
      await admin('POST', '/v1/shop/queues/emails/attempts', {
        messageId: 'order-7-receipt',
        error: 'smtp 554: mailbox unavailable',
        payload: { to: 'customer@example.com', order: 7 },
        attempt,
      });
    }
    [pageA, pageB] = await Promise.all([openTab(started), openTab(started)]);
    for (const page of [pageA, pageB]) page.on('pageerror', (error) => pageErrors.push(error.message));
  });

  afterAll(async () => {
    await launching?.catch(() => undefined);
    await browser?.close();
    await caller?.stop();
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.cleanup();
  });

  afterEach(() => expect(pageErrors).toEqual([]));

  it('says clearly that a wrong token was refused, and keeps it nowhere', async () => {
    await signIn(pageA, a.url, 'not-the-admin-token-000');
    const alert = pageA.getByRole('alert').filter({ hasText: '401' });
    await alert.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await alert.innerText()).toMatch(/refused the token \(401 unauthorized\)/);
    expect(await pageA.evaluate(() => (globalThis as unknown as PageGlobals).sessionStorage.length)).toBe(0);
    expect(pageA.url()).not.toContain('not-the-admin-token');
    await screenshot(pageA, 'sign-in');
  });

  it('shows the fleet: the dependency the SDK process calls, on instance A, live', async () => {
    await signIn(pageA, a.url, ADMIN);
    await row(pageA, 'payments-api').waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await row(pageA, 'payments-api').locator('[data-column="state"]').innerText()).toContain('closed');
    // One reporter: the SDK process (its reports, within the budget window).
    await row(pageA, 'payments-api')
      .locator('[data-column="reporters"]', { hasText: /^\s*1\s*$/ })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    // A limit shows what it holds now, beside what it allows.
    const limits = row(pageA, 'inventory').locator('[data-column="limits"]');
    await limits.filter({ hasText: '1 of 3 in flight' }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await limits.innerText()).toContain('burst 10 (9 left)');
    // The token is in this tab's sessionStorage, not in the URL.
    expect(
      await pageA.evaluate(() => (globalThis as unknown as PageGlobals).sessionStorage.getItem('sluice.console.token')),
    ).toBe(ADMIN);
    expect(pageA.url()).not.toContain(ADMIN);
    await pageA.getByText('Live: breaker changes arrive').waitFor({ timeout: UI_TIMEOUT_MS });
    await screenshot(pageA, 'fleet');

    await signIn(pageB, b.url, ADMIN);
    await row(pageB, 'payments-api').waitFor({ timeout: UI_TIMEOUT_MS });
    await pageB.getByText('Live: breaker changes arrive').waitFor({ timeout: UI_TIMEOUT_MS });
  });

  it('trips the breaker from A with a reason: the SDK process’s next call is refused with it, B shows forced_open without a reload', async () => {
    const reason = 'bad deploy 4711, rolling back';
    await pageB.evaluate(() => ((globalThis as unknown as PageGlobals).notReloaded = true));
    await row(pageA, 'payments-api').getByRole('link', { name: 'payments-api' }).click();
    await pageA.getByRole('heading', { name: 'shop / payments-api' }).waitFor();
    // The chart starts with what the coordinators' store kept of the SDK process's reports before the page opened.
    await pageA
      .locator('figure.chart figcaption', { hasText: 'From the coordinator’s history' })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    // The reason is required: the trip is refused in the page, before any dialog.
    await pageA.getByRole('button', { name: 'Trip (force open)' }).click();
    await pageA.getByText('A reason is required.').waitFor();
    await pageA.getByLabel('Reason').fill(reason);
    await pageA.getByRole('button', { name: 'Trip (force open)' }).click();
    const dialog = pageA.getByRole('dialog', { name: 'Trip payments-api?' });
    expect(await dialog.innerText()).toContain(reason);
    const callsBefore = caller.calls.length;
    await dialog.getByRole('button', { name: 'Trip', exact: true }).click();

    const done = pageA.getByRole('status').filter({ hasText: 'Audit:' });
    await done.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await done.innerText()).toMatch(
      /forced open[\s\S]*ops-alice · breaker\.trip · shop\/payments-api · “bad deploy 4711, rolling back”/,
    );

    const refused = await caller.nextCall(callsBefore, (call) => !call.ok);
    expect(refused.error).toMatchObject({ name: 'BreakerOpenError', isBreakerOpenError: true, state: 'forced_open' });
    // The operator's reason travels with the refusal (the SDK's BreakerOpenError.operatorReason).
    expect(refused.error?.operatorReason).toBe(reason);

    const stateOnB = row(pageB, 'payments-api').locator('[data-column="state"]');
    await stateOnB.filter({ hasText: 'forced open' }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await stateOnB.innerText()).toContain(reason);
    // The page leads with the incident: the summary, the row first, who forced it and until when.
    await pageB.locator('.incident-summary').filter({ hasText: '1 forced open' }).waitFor({ timeout: UI_TIMEOUT_MS });
    await stateOnB.filter({ hasText: 'by ops-alice' }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await stateOnB.innerText()).toContain('until reset');
    expect(await pageB.locator('table.data tbody tr').first().getAttribute('data-key')).toBe('payments-api');
    expect(await pageB.locator('.fleet .status').innerText()).toMatch(/refreshed \d\d:\d\d:\d\dZ$/);
    expect(await pageB.evaluate(() => (globalThis as unknown as PageGlobals).notReloaded)).toBe(true);
    // A long reason and unwrapped numbers widen the table, not the page: the table scrolls in its frame.
    const widths = await pageB.evaluate(() => {
      const page = globalThis as unknown as PageGlobals;
      return { page: page.document.documentElement.scrollWidth, viewport: page.innerWidth };
    });
    expect(widths.page).toBeLessThanOrEqual(widths.viewport);
    await screenshot(pageB, 'fleet-forced-open');

    // Reset, so the rest runs on a closed breaker.
    await pageA.getByRole('button', { name: 'Reset' }).click();
    await pageA
      .getByRole('dialog', { name: 'Reset payments-api?' })
      .getByRole('button', { name: 'Reset', exact: true })
      .click();
    await pageA.getByRole('status').filter({ hasText: 'breaker.reset' }).waitFor({ timeout: UI_TIMEOUT_MS });
    await stateOnB.filter({ hasText: /^closed/ }).waitFor({ timeout: UI_TIMEOUT_MS });
  });

  it('opened mid-incident, the dependency page draws the minutes before it opened, and the trip after', async () => {
    // A coordinator of its own on the embedded store, whose clock the test steps through the last
    // 12 minutes of an incident (a report every 10 s), then leaves on the real time.
    const clock = { offsetMs: -12 * 60_000, now: () => Date.now() + clock.offsetMs };
    const incident = await testCoordinator({
      listen: true,
      storeClock: clock,
      config: { tokens: TOKENS as TokenDefinition[] },
      policies: {
        namespaces: {
          shop: {
            dependencies: {
              'payments-api': {
                retryBudget: { ratio: 0.1, minRetriesPerSecond: 1 },
                breaker: { failureRateThreshold: 0.5, minimumCalls: 20, openMs: 300_000 },
              },
            },
          },
        },
      },
    });
    try {
      for (let step = 0; clock.offsetMs < 0; step++) {
        // Calm (a few failures and retries), then failures and retries climb over the last five
        // minutes until the breaker opens; then the callers, refused, call and retry little.
        const worse = Math.max(0, step - 42) / 30;
        const wobble = (step * 7) % 4;
        const requests = worse < 0.85 ? 100 : 15;
        const failures = Math.min(requests, Math.round(requests * (0.01 + worse * 0.62)) + wobble);
        const retries = worse < 0.85 ? Math.min(20, 1 + ((step * 5) % 3) + Math.round(worse * 22)) : 0;
        const response = await fetch(`${incident.url}/v1/shop/reports`, {
          method: 'POST',
          headers: { authorization: `Bearer ${CLIENT}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            reporter: 'checkout-7f9c',
            deps: [{ dep: 'payments-api', requests, successes: requests - failures, failures, slow: 0, retries }],
          }),
        });
        expect(response.status).toBe(200);
        clock.offsetMs = Math.min(0, clock.offsetMs + 10_000);
      }
      const page = await openTab(browser!);
      page.on('pageerror', (error) => pageErrors.push(error.message));
      try {
        // Signed in on the dependency's own address: the page it shows first.
        await page.goto(`${incident.url}/console/#/deps/shop/payments-api`);
        await page.getByLabel('Admin token').fill(ADMIN);
        await page.getByRole('button', { name: 'Sign in' }).click();
        const caption = page.locator('figure.chart figcaption');
        await caption.filter({ hasText: 'Over the last 12 min' }).waitFor({ timeout: UI_TIMEOUT_MS });
        expect(await caption.innerText()).toContain('From the coordinator’s history');
        // The band beneath the lines: closed for minutes, then open.
        const band = page.locator('figure.chart rect.band');
        expect(await band.evaluateAll((rects) => rects.map((rect) => rect.getAttribute('class')))).toEqual([
          'band state-closed',
          'band state-open',
        ]);
        await page.getByLabel('Reason').fill('payments provider outage, INC-4711');
        await page.getByLabel('Duration').fill('30m');
        await page.getByRole('button', { name: 'Trip (force open)' }).click();
        await page
          .getByRole('dialog', { name: 'Trip payments-api?' })
          .getByRole('button', { name: 'Trip', exact: true })
          .click();
        const done = page.getByRole('status').filter({ hasText: 'Audit:' });
        await done.waitFor({ timeout: UI_TIMEOUT_MS });
        // The audit entry says how long the trip lasts.
        expect(await done.innerText()).toMatch(
          /breaker\.trip · shop\/payments-api · “payments provider outage, INC-4711” · for 30 m, until \d\d:\d\d:\d\dZ/,
        );
        await page
          .locator('figure.chart rect.band.state-forced_open')
          .waitFor({ state: 'attached', timeout: UI_TIMEOUT_MS });
        // A few live readings after the trip, then the picture for docs/console.md.
        await new Promise((resolve) => setTimeout(resolve, 4500));
        await screenshot(page, 'dependency');
      } finally {
        await page.context().close();
      }
    } finally {
      await incident.close();
    }
  });

  it('asks before keeping a trip of a dependency nobody calls (known: false)', async () => {
    await pageA.goto(`${a.url}/console/#/fleet/shop`);
    await pageA.getByLabel('Open a dependency by name').fill('pricing-apii');
    await pageA.getByRole('button', { name: 'Open', exact: true }).click();
    await pageA.getByRole('heading', { name: 'shop / pricing-apii' }).waitFor();
    await pageA.getByLabel('Reason').fill('pricing incident');
    await pageA.getByRole('button', { name: 'Trip (force open)' }).click();
    const first = pageA.getByRole('dialog', { name: 'Trip pricing-apii?' });
    expect(await first.innerText()).toContain('is not among shop’s dependencies');
    await first.getByRole('button', { name: 'Trip', exact: true }).click();

    const unknown = pageA.getByRole('dialog', { name: 'pricing-apii is unknown' });
    await unknown.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await unknown.innerText()).toMatch(/No caller has reported or asked for shop\/pricing-apii/);
    await screenshot(pageA, 'unknown-dependency');
    await unknown.getByRole('button', { name: 'Undo: reset it' }).click();
    await pageA
      .getByRole('status')
      .filter({ hasText: 'breaker.reset · shop/pricing-apii' })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    const breakers = (await admin('GET', '/admin/v1/shop/breakers')) as {
      items: Array<{ dependency: string; state: string }>;
    };
    expect(breakers.items.find((item) => item.dependency === 'pricing-apii')?.state).toBe('closed');
  });

  it('opens the Policies page on a dependency’s policy in effect, and the namespace default on links to them', async () => {
    await pageA.goto(`${a.url}/console/#/fleet/shop`);
    await pageA.getByRole('navigation').getByRole('link', { name: 'Policies' }).click();
    // Nothing chosen: the first dependency of the first namespace, with the policy in effect for it.
    await pageA.getByRole('heading', { name: 'shop · dependency inventory' }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await pageA.getByLabel('Name', { exact: true }).inputValue()).toBe('inventory');
    const inEffect = pageA.locator('section', { has: pageA.getByRole('heading', { name: 'In effect' }) });
    await inEffect.locator('pre', { hasText: '"concurrency"' }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await inEffect.innerText()).toMatch(/"limit": 3/);
    // The namespace default is in effect through each dependency: it says so, and links to them.
    await pageA.goto(`${a.url}/console/#/policies/shop/default`);
    await inEffect.getByRole('link', { name: 'pricing-apii' }).click();
    await pageA.getByRole('heading', { name: 'shop · dependency pricing-apii' }).waitFor({ timeout: UI_TIMEOUT_MS });
    await inEffect.locator('pre', { hasText: '"retryBudget"' }).waitFor({ timeout: UI_TIMEOUT_MS });
  });

  it('shows a policy edit made on a stale version as a 412 conflict, with the newer version and a diff', async () => {
    await admin('PUT', '/admin/v1/shop/policies/deps/payments-api', { retryBudget: { ratio: 0.1 } });
    await pageA.goto(`${a.url}/console/#/policies/shop/deps/payments-api`);
    const editor = pageA.getByLabel('Edit the stored document (JSON)');
    await pageA.getByRole('heading', { name: /Stored document \(version 1\)/ }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(JSON.parse(await editor.inputValue())).toEqual({ retryBudget: { ratio: 0.1 } });

    // A field the API refuses is named.
    await editor.fill('{"retryBudget": {"ratio": 7}}');
    await pageA.getByRole('button', { name: 'Save' }).click();
    const invalid = pageA.getByRole('alert').filter({ hasText: '400' });
    await invalid.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await invalid.innerText()).toContain('retryBudget.ratio');

    // Someone else saves version 2 meanwhile; saving the edit of version 1 is refused with 412.
    await admin(
      'PUT',
      '/admin/v1/shop/policies/deps/payments-api',
      { retryBudget: { ratio: 0.2 } },
      { 'if-match': '"1"' },
    );
    await editor.fill('{"retryBudget": {"ratio": 0.3}}');
    await pageA.getByRole('button', { name: 'Save' }).click();
    const conflict = pageA.getByRole('alert').filter({ hasText: '412' });
    await conflict.waitFor({ timeout: UI_TIMEOUT_MS });
    const text = await conflict.innerText();
    expect(text).toContain('You edited version 1; the stored one is now version 2.');
    expect(text).toMatch(/^- +"ratio": 0\.2$/m);
    expect(text).toMatch(/^\+ +"ratio": 0\.3$/m);
    await screenshot(pageA, 'policies');
    expect(await admin('GET', '/admin/v1/shop/policies/deps/payments-api')).toEqual({ retryBudget: { ratio: 0.2 } });
  });

  it('lists the queues holding dead letters, and redrives a dead letter from the page', async () => {
    // No queue name needed: the page lists the namespace's queues that hold dead letters.
    await pageA.goto(`${a.url}/console/#/dead-letters/shop`);
    const queue = pageA.locator('tr[data-queue="emails"]');
    await queue.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await queue.innerText()).toMatch(/emails\s+1\s+\d{4}-\d\d-\d\dT/);
    await queue.getByRole('link', { name: 'emails' }).click();
    const entry = pageA.locator('tr[data-key="order-7-receipt"]');
    await entry.waitFor({ timeout: UI_TIMEOUT_MS });
    await entry.getByRole('button', { name: 'Inspect order-7-receipt' }).click();
    const detail = pageA.getByRole('heading', { name: 'Message order-7-receipt' });
    await detail.waitFor();
    const page = await pageA.locator('main').innerText();
    expect(page).toContain('smtp 554: mailbox unavailable');
    expect(page).toContain('"to": "customer@example.com"');
    await screenshot(pageA, 'dead-letters');
    await pageA.getByRole('button', { name: 'Redrive', exact: true }).click();
    await pageA
      .getByRole('dialog', { name: 'Redrive order-7-receipt?' })
      .getByRole('button', { name: 'Redrive', exact: true })
      .click();
    await pageA
      .getByRole('status')
      .filter({ hasText: 'dead_letter.redrive · shop/emails/order-7-receipt' })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    await pageA.getByText('emails has no dead letters.').waitFor({ timeout: UI_TIMEOUT_MS });
    await pageA.getByText('No queue of shop holds dead letters.').waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await admin('GET', '/admin/v1/shop/queues/emails/dead-letters')).toMatchObject({ items: [] });
  });

  it('lists the audit log, filterable: who did what, when and why', async () => {
    // A drill: a trip for ten minutes, reset at once; its entry says how long it was to last.
    await admin('POST', '/admin/v1/shop/breakers/inventory/trip', {
      reason: 'failover drill',
      durationSeconds: 600,
    });
    await admin('POST', '/admin/v1/shop/breakers/inventory/reset', { reason: 'drill over' });
    await pageA.goto(`${a.url}/console/#/audit`);
    const drill = pageA.locator('table.data tbody tr').filter({ hasText: 'failover drill' });
    await drill.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await drill.innerText()).toMatch(/for 10 m, until \d\d:\d\d:\d\dZ/);
    const trip = pageA
      .locator('table.data tbody tr')
      .filter({ hasText: 'breaker.trip' })
      .filter({ hasText: 'payments-api' });
    await trip.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await trip.innerText()).toContain('bad deploy 4711');
    // A trip without a duration lasts until reset, and says so.
    expect(await trip.innerText()).toContain('until reset');
    await pageA.getByLabel('Action').selectOption('dead_letter.redrive');
    expect(await pageA.locator('table.data tbody tr').count()).toBe(1);
    await pageA.getByLabel('Action').selectOption('');
    await screenshot(pageA, 'audit');
  });

  it('says so in a banner when the store is unavailable, and again when it is back', async () => {
    await pageB.goto(`${b.url}/console/#/fleet/shop`);
    await row(pageB, 'pricing-apii').waitFor({ timeout: UI_TIMEOUT_MS });
    // Sortable (the header is a button) and filterable, in the page.
    const names = () =>
      pageB.locator('table.data tbody tr').evaluateAll((rows) => rows.map((tr) => tr.getAttribute('data-key')));
    // By urgency first (all closed here), then by name.
    expect(await names()).toEqual(['inventory', 'payments-api', 'pricing-apii']);
    await pageB.getByRole('button', { name: 'Dependency', exact: true }).click();
    expect(await names()).toEqual(['inventory', 'payments-api', 'pricing-apii']);
    await pageB.getByRole('button', { name: 'Dependency', exact: true }).click();
    expect(await names()).toEqual(['pricing-apii', 'payments-api', 'inventory']);
    await pageB.getByLabel('Filter').fill('pay');
    expect(await names()).toEqual(['payments-api']);
    redis.pause();
    try {
      const banner = pageB.locator('#banner');
      await banner.filter({ hasText: 'store (Redis) is unavailable' }).waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await banner.innerText()).toMatch(/are not current/);
      expect(await pageB.locator('table.data').getAttribute('class')).toContain('stale');
      await screenshot(pageB, 'degraded');
    } finally {
      redis.resume();
    }
    await pageB.locator('#banner').waitFor({ state: 'hidden', timeout: UI_TIMEOUT_MS });
  });
});
