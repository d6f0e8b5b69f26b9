import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import {
  matches,
  parseExposition,
  promtool,
  readExpression,
  readRuleFile,
  type PrometheusRule,
  type Sample,
  type Selector,
} from '../support/prometheus';
import { RedisServerProcess } from '../support/redis-server';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

// The alert rules must not refer to metrics or labels the service does not expose: a rename in
// the code would leave an alert that can never fire. Through the real app, on a private Redis: a
// retry budget is exhausted, a breaker opens, then Redis dies. The scrape that follows must have
// every metric, label and label value the rule files select, with the values the scenario implies.

const RULES_DIR = join(__dirname, '../../deploy/prometheus');
const RULE_FILES = readdirSync(RULES_DIR)
  .filter((file) => file.endsWith('.rules.yml'))
  .map((file) => join(RULES_DIR, file));
/** Added by Prometheus to every series it scrapes, or made by Prometheus itself: never in the exposition. */
const TARGET_LABELS = new Set(['job', 'instance']);
const PROMETHEUS_METRICS = new Set(['up']);

const NS = 'contract';
const BUDGET_LIMIT = 10; // ratio 0, 1 retry/s over a 10 s window
const DENIED = 10;
const POLICIES = {
  namespaces: {
    [NS]: {
      dependencies: {
        pay: { retryBudget: { ratio: 0, minRetriesPerSecond: 1, maxAttempts: 5 } },
        flaky: { breaker: { minimumCalls: 10, openMs: 60_000 } },
      },
    },
  },
};

interface Rule extends PrometheusRule {
  file: string;
}

const rules: Rule[] = RULE_FILES.flatMap((file) =>
  readRuleFile(file).groups.flatMap((group) => group.rules.map((rule) => ({ ...rule, file }))),
);
const recorded = new Map(rules.filter((rule) => rule.record).map((rule) => [rule.record!, rule]));

/**
 * The raw selectors an expression depends on, through the recording rules it uses; matchers on a
 * recorded series apply to the raw series it is computed from (its labels are kept from them).
 */
function rawSelectors(expression: string, outer: Selector['matchers'] = [], seen = new Set<string>()): Selector[] {
  return readExpression(expression).selectors.flatMap((selector) => {
    const matchers = [...selector.matchers, ...outer].filter((matcher) => !TARGET_LABELS.has(matcher.label));
    const source = recorded.get(selector.metric);
    if (!source) return [{ metric: selector.metric, matchers }];
    if (seen.has(selector.metric)) throw new Error(`recording rule ${selector.metric} refers to itself`);
    return rawSelectors(source.expr, matchers, new Set([...seen, selector.metric]));
  });
}

describe('metrics contract: what the alert rules select exists after a real scenario', () => {
  const redis = new RedisServerProcess();
  let coordinator: TestCoordinator | undefined;
  let samples: Sample[];
  let families: Map<string, string>;
  const value = (name: string, labels: Record<string, string>): number =>
    samples
      .filter((s) => s.name === name && Object.entries(labels).every(([label, v]) => s.labels[label] === v))
      .reduce((sum, s) => sum + s.value, 0);

  beforeAll(async () => {
    await redis.start();
    coordinator = await testCoordinator({ redis: redis.url, policies: POLICIES, config: { storeTimeoutMs: 500 } });
    const { server } = coordinator;

    // A retry budget exhausted: the limit granted, then every retry refused.
    for (let i = 0; i < BUDGET_LIMIT + DENIED; i++) {
      const answer = await request(server)
        .post(`/v1/${NS}/deps/pay/retry`)
        .send({ attempt: 1, idempotent: true, status: 503 })
        .expect(200);
      expect(answer.body.reason).toBe(i < BUDGET_LIMIT ? 'granted' : 'budget_exhausted');
    }
    // A breaker opened by reported failures, then asked for admission (and for a retry) while open.
    const report = await request(server)
      .post(`/v1/${NS}/reports`)
      .send({ reporter: 'pod-1', deps: [{ dep: 'flaky', requests: 10, successes: 0, failures: 10, slow: 0 }] })
      .expect(200);
    expect(report.body.deps.flaky.breaker.state).toBe('open');
    const admit = await request(server).post(`/v1/${NS}/deps/flaky/admit`).send({}).expect(200);
    expect(admit.body).toMatchObject({ allow: false, reason: 'breaker_open' });
    await request(server).post(`/v1/${NS}/deps/flaky/retry`).send({ attempt: 1, idempotent: true }).expect(200);
    // The store lost: readiness and decisions answer 503, store operations fail.
    await redis.kill();
    await request(server).get('/health/ready').expect(503);
    await request(server).post(`/v1/${NS}/deps/pay/retry`).send({ attempt: 1, idempotent: true }).expect(503);

    const scrape = await request(server).get('/metrics').expect(200);
    ({ samples, families } = parseExposition(scrape.text));
  });

  afterAll(async () => {
    // With Redis gone the app's shutdown hooks wait for it (to unsubscribe its policy watches):
    // bring it back first.
    await redis.start();
    await coordinator?.close();
    await redis.cleanup();
  });

  it('the rule files are found and use recording rules named level:metric:operations', () => {
    expect(RULE_FILES.length).toBeGreaterThan(0);
    expect(rules.filter((rule) => rule.alert).length).toBeGreaterThanOrEqual(6);
    for (const name of recorded.keys()) expect(name).toMatch(/^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$/);
  });

  it('the scenario leaves the values it implies', () => {
    const pay = { namespace: NS, dependency: 'pay' };
    const flaky = { namespace: NS, dependency: 'flaky' };
    expect(value('sluice_retry_decisions_total', { ...pay, result: 'granted' })).toBe(BUDGET_LIMIT);
    expect(value('sluice_retry_decisions_total', { ...pay, result: 'budget_exhausted' })).toBe(DENIED);
    expect(value('sluice_retry_decisions_total', { ...flaky, result: 'breaker_open' })).toBe(1);

    expect(value('sluice_breaker_state', { ...flaky, state: 'open' })).toBe(1);
    for (const state of ['closed', 'half_open', 'forced_open', 'forced_closed']) {
      expect(value('sluice_breaker_state', { ...flaky, state })).toBe(0);
    }
    expect(value('sluice_breaker_state', { ...pay, state: 'closed' })).toBe(1);
    const transitions = samples.filter(
      (s) => s.name === 'sluice_breaker_transitions_total' && s.labels.dependency === 'flaky',
    );
    expect(transitions.map((s) => [s.labels.from, s.labels.to, s.value])).toEqual([['closed', 'open', 1]]);

    const retryRoute = { route: '/v1/:ns/deps/:dep/retry', method: 'POST' };
    expect(value('sluice_http_request_duration_seconds_count', { ...retryRoute, status: '200' })).toBe(
      BUDGET_LIMIT + DENIED + 1,
    );
    expect(value('sluice_http_request_duration_seconds_count', { ...retryRoute, status: '503' })).toBe(1);
    expect(
      value('sluice_http_request_duration_seconds_count', { route: '/v1/:ns/deps/:dep/admit', status: '200' }),
    ).toBe(1);
    expect(value('sluice_http_request_duration_seconds_count', { route: '/health/ready', status: '503' })).toBe(1);

    expect(value('sluice_store_errors_total', { operation: 'ping' })).toBe(1);
    expect(value('sluice_store_errors_total', { operation: 'decideRetry' })).toBe(1);
    expect(value('sluice_store_operation_duration_seconds_count', {})).toBeGreaterThan(BUDGET_LIMIT + DENIED);
  });

  const selectorsInRules = rules.flatMap((rule) =>
    rawSelectors(rule.expr)
      .filter((selector) => !PROMETHEUS_METRICS.has(selector.metric))
      .map((selector) => [rule.record ?? rule.alert!, selector] as const),
  );

  it.each(selectorsInRules.map(([rule, selector]) => [rule, describeSelector(selector), selector]))(
    '%s: %s selects series the service exposes',
    (_rule, _text, selector) => {
      const family = selector.metric.replace(/_(bucket|count|sum)$/, '');
      expect({ metric: selector.metric, declared: families.has(selector.metric) || families.has(family) }).toEqual({
        metric: selector.metric,
        declared: true,
      });
      const selected = samples.filter(
        (s) => s.name === selector.metric && selector.matchers.every((matcher) => matches(s.labels, matcher)),
      );
      expect(selected.length).toBeGreaterThan(0);
    },
  );

  it.each(rules.map((rule) => [rule.record ?? rule.alert!, rule] as const))(
    '%s groups only by labels its series carry',
    (name, rule) => {
      const raw = rawSelectors(rule.expr).filter((selector) => !PROMETHEUS_METRICS.has(selector.metric));
      const available = new Set([
        ...TARGET_LABELS,
        ...samples
          .filter((s) => raw.some((selector) => selector.metric === s.name))
          .flatMap((s) => Object.keys(s.labels)),
      ]);
      // by/without/on/ignoring labels: on the raw series the rule reads (directly or through recording rules).
      const grouping = new Set(readExpression(rule.expr).groupingLabels);
      for (const label of grouping)
        expect({ rule: name, label, known: available.has(label) }).toMatchObject({ known: true });
    },
  );

  it('replayed every minute for half an hour, the scenario fires the alerts it should (promtool)', () => {
    // Every exposed series the rules read becomes a promtool input series: counters grow by their
    // scraped value each minute (the scenario, repeated), gauges hold their value. One replica is up.
    const used = new Set(selectorsInRules.map(([, selector]) => selector.metric));
    const counters = new Set(
      [...families].filter(([, type]) => type === 'counter' || type === 'histogram').map(([name]) => name),
    );
    const series = samples
      .filter((s) => used.has(s.name))
      .map((s) => {
        const family = s.name.replace(/_(bucket|count|sum|total)$/, '');
        const isCounter = counters.has(s.name) || counters.has(family) || s.name.endsWith('_total');
        const labels = Object.entries({ ...s.labels, job: 'sluice', instance: 'contract:8080' })
          .map(([label, v]) => `${label}=${JSON.stringify(v)}`)
          .join(',');
        return { series: `${s.name}{${labels}}`, values: isCounter ? `0+${s.value}x40` : `${s.value}x40` };
      });
    series.push({ series: 'up{job="sluice",instance="contract:8080"}', values: '1x40' });
    const dir = mkdtempSync(join(tmpdir(), 'sluice-promtool-'));
    const testFile = join(dir, 'replay.test.yml');
    writeFileSync(
      testFile,
      stringify({
        rule_files: RULE_FILES,
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: series,
            promql_expr_test: [
              {
                // Decision latency depends on the machine running the test: left out.
                expr: `count by (alertname, namespace, dependency) (ALERTS{alertstate="firing", alertname!="SluiceDecisionLatencyHigh"})`,
                eval_time: '30m',
                exp_samples: [
                  { labels: `{alertname="SluiceRetryBudgetExhausted",namespace="${NS}",dependency="pay"}`, value: 1 },
                  { labels: `{alertname="SluiceCircuitBreakerOpen",namespace="${NS}",dependency="flaky"}`, value: 1 },
                  // The breaker trips from closed every minute: that is flapping.
                  {
                    labels: `{alertname="SluiceCircuitBreakerFlapping",namespace="${NS}",dependency="flaky"}`,
                    value: 1,
                  },
                  { labels: '{alertname="SluiceStoreUnavailable"}', value: 1 },
                ],
              },
            ],
          },
        ],
      }),
    );
    const result = promtool(['test', 'rules', testFile]);
    expect({ status: result.status, output: result.output }).toMatchObject({ status: 0 });
  });
});

function describeSelector(selector: Selector): string {
  const matchers = selector.matchers.map((m) => `${m.label}${m.op}${JSON.stringify(m.value)}`).join(',');
  return `${selector.metric}{${matchers}}`;
}
