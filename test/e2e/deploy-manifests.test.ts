import { execFileSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigError } from '../../apps/coordinator/src/config/config-error';
import { loadConfig } from '../../apps/coordinator/src/config/config';
import { parseTokens } from '../../apps/coordinator/src/config/tokens';
import { MetricsService } from '../../apps/coordinator/src/metrics/metrics.service';
import { readPoliciesFile } from '../../apps/coordinator/src/policies/policies-file';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';
import { promtool, readExpression, readRuleFile, type PrometheusRule } from '../support/prometheus';

// Every deployment file is parsed and checked against the code: ports, probe and scrape paths,
// environment variable names and values, metric and label names, the entry point the image runs.
// The Prometheus rules are checked and unit-tested with promtool.

/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are untyped YAML documents */
type Doc = Record<string, any>;

const ROOT = join(__dirname, '../..');
const DEPLOY = join(ROOT, 'deploy');
const PROMETHEUS_DIR = join(DEPLOY, 'prometheus');
const RULES_FILE = join(PROMETHEUS_DIR, 'sluice.rules.yml');
const RULES_TEST_FILE = join(PROMETHEUS_DIR, 'sluice.rules.test.yml');
const RUNBOOK = join(PROMETHEUS_DIR, 'RUNBOOK.md');
const KUBERNETES = join(DEPLOY, 'kubernetes');
const ALERTS = [
  'SluiceRetryBudgetExhausted',
  'SluiceCircuitBreakerOpen',
  'SluiceCircuitBreakerFlapping',
  'SluiceStoreUnavailable',
  'SluiceStoreReset',
  'SluiceDecisionLatencyHigh',
  'SluiceDown',
];
/** The `job` the rules expect (SluiceDown: up{job="sluice"}). */
const JOB = 'sluice';
/** Labels Prometheus adds to scraped series. */
const TARGET_LABELS = ['job', 'instance'];

const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
};
const DEFAULTS = loadConfig({});
const rules: PrometheusRule[] = readRuleFile(RULES_FILE).groups.flatMap((group) => group.rules);
const recordedNames = new Set(rules.flatMap((rule) => (rule.record ? [rule.record] : [])));

/** Metric families the service declares (name → label names), default process metrics included. */
async function metricFamilies(): Promise<Map<string, string[]>> {
  const metrics = new MetricsService();
  const families = new Map<string, string[]>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    const object = metrics.registry.getSingleMetric(metric.name) as unknown as { labelNames?: string[] };
    families.set(metric.name, [...(object?.labelNames ?? [])]);
  }
  return families;
}

/** The family a sample name belongs to (histogram series carry a suffix). */
function familyOf(name: string, families: Map<string, string[]>): string | undefined {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|count|sum)$/, '');
  return families.has(base) ? base : undefined;
}

/** True when the service reads `name`: an invalid value stops it, or a valid one changes its configuration. */
function knownVariable(name: string): boolean {
  try {
    return JSON.stringify(loadConfig({ [name]: 'x' })) !== JSON.stringify(DEFAULTS);
  } catch (error) {
    return error instanceof ConfigError && error.variable === name;
  }
}

/** `--name value` pairs of a redis-server command line, by name. */
function redisArguments(args: string[]): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith('--')) pairs[args[i].slice(2)] = args[i + 1];
  }
  return pairs;
}

/** The directives of a redis.conf, by name. */
function redisConf(text: string): Record<string, string> {
  const directives: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([a-z-]+)\s+(.*)$/.exec(line.trim());
    if (match) directives[match[1]] = match[2].replace(/^"(.*)"$/, '$1');
  }
  return directives;
}

function yamlFile(path: string): Doc {
  return parse(readFileSync(path, 'utf8'), { merge: true }) as Doc;
}

function tempFile(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sluice-deploy-')), name);
  writeFileSync(path, content);
  return path;
}

const VALID_TOKENS = JSON.stringify([
  { id: 'ops', secret: 'deploy-test-admin-secret', role: 'admin', namespaces: ['*'] },
]);

describe('deployment files match the code', () => {
  let coordinator: TestCoordinator;
  let families: Map<string, string[]>;

  beforeAll(async () => {
    coordinator = await testCoordinator();
    families = await metricFamilies();
  });
  afterAll(async () => {
    await coordinator?.close();
  });

  async function expectRoute(path: string): Promise<void> {
    const response = await coordinator.app.getHttpAdapter().getInstance().inject({ method: 'GET', url: path });
    expect({ path, status: response.statusCode }).toEqual({ path, status: 200 });
  }

  /** Every sluice_* metric or recording rule named in `text` exists. */
  function expectKnownMetricNames(text: string, where: string): void {
    const names = new Set(text.match(/\b(?:[a-z_]+:)?sluice_[a-z0-9_]+(?::[a-z0-9_]+)?\b/g) ?? []);
    expect(names.size).toBeGreaterThan(0);
    for (const name of names) {
      const known = recordedNames.has(name) || familyOf(name, families) !== undefined;
      expect({ where, name, known }).toEqual({ where, name, known: true });
    }
  }

  describe('Prometheus rules (promtool)', () => {
    it('promtool check rules passes', () => {
      const result = promtool(['check', 'rules', RULES_FILE]);
      expect({ status: result.status, output: result.output }).toMatchObject({ status: 0 });
    });

    it('promtool test rules passes (deploy/prometheus/sluice.rules.test.yml)', () => {
      const result = promtool(['test', 'rules', basename(RULES_TEST_FILE)], PROMETHEUS_DIR);
      expect({ status: result.status, output: result.output }).toEqual({
        status: 0,
        output: expect.stringContaining('SUCCESS'),
      });
    });

    it('every alert has a unit test where it fires and one where it stays silent', () => {
      const tests = (yamlFile(RULES_TEST_FILE).tests as Doc[]).flatMap((test) => (test.alert_rule_test ?? []) as Doc[]);
      const alerts = rules.filter((rule) => rule.alert).map((rule) => rule.alert!);
      expect(new Set(alerts)).toEqual(new Set(ALERTS));
      for (const alert of alerts) {
        const cases = tests.filter((test) => test.alertname === alert);
        const fires = cases.some((test) => (test.exp_alerts ?? []).length > 0);
        const silent = cases.some((test) => (test.exp_alerts ?? []).length === 0);
        expect({ alert, fires, silent }).toEqual({ alert, fires: true, silent: true });
      }
    });

    it('recording rules are named level:metric:operations; alerts carry severity, summary, description, runbook_url', () => {
      const runbook = readFileSync(RUNBOOK, 'utf8');
      const anchors = new Set(
        [...runbook.matchAll(/^#+ (.+)$/gm)].map(([, heading]) =>
          heading
            .trim()
            .toLowerCase()
            .replace(/[^a-z0-9]+/g, ''),
        ),
      );
      for (const rule of rules) {
        if (rule.record) {
          expect(rule.record).toMatch(/^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$/);
          continue;
        }
        expect({ alert: rule.alert, severity: rule.labels?.severity }).toEqual({
          alert: rule.alert,
          severity: expect.stringMatching(/^(warning|critical)$/),
        });
        expect(Object.keys(rule.annotations ?? {}).sort()).toEqual(['description', 'runbook_url', 'summary']);
        const anchor = /RUNBOOK\.md#([a-z0-9]+)$/.exec(rule.annotations!.runbook_url)?.[1];
        expect({ alert: rule.alert, anchor }).toEqual({ alert: rule.alert, anchor: rule.alert!.toLowerCase() });
        expect(anchors.has(anchor!)).toBe(true);
      }
    });

    it('the runbook names only metrics and recording rules that exist', () => {
      expectKnownMetricNames(readFileSync(RUNBOOK, 'utf8'), 'RUNBOOK.md');
    });

    it('every alert aggregates across instances (no per-instance alert)', () => {
      for (const rule of rules.filter((r) => r.alert)) {
        const expression = rule.expr;
        // Either an aggregation drops `instance`, or the alert reads recording rules that do.
        const readsRecorded = readExpression(expression).selectors.some((s) => recordedNames.has(s.metric));
        const aggregates = /\b(sum|max|min|count|avg|absent)\b/.test(expression);
        expect({ alert: rule.alert, aggregated: readsRecorded || aggregates }).toEqual({
          alert: rule.alert,
          aggregated: true,
        });
        expect(readExpression(expression).groupingLabels).not.toContain('instance');
      }
      for (const rule of rules.filter((r) => r.record)) {
        expect({ record: rule.record, groups: readExpression(rule.expr).groupingLabels }).not.toEqual(
          expect.objectContaining({ groups: expect.arrayContaining(['instance']) }),
        );
      }
    });
  });

  describe('Dockerfile (deploy/Dockerfile, built from the repository root)', () => {
    interface Instruction {
      keyword: string;
      args: string;
    }
    const stages: Instruction[][] = [];
    for (const line of readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8')
      .replace(/\\\n/g, ' ')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))) {
      const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line)!;
      if (keyword.toUpperCase() === 'FROM') stages.push([]);
      stages[stages.length - 1]?.push({ keyword: keyword.toUpperCase(), args });
    }
    const runtime = stages[stages.length - 1] ?? [];
    const find = (stage: Instruction[], keyword: string) => stage.filter((i) => i.keyword === keyword);

    it('builds in one stage and runs production dependencies only, as a non-root user, in another', () => {
      expect(stages.length).toBeGreaterThanOrEqual(2);
      const build = stages[0];
      expect(find(build, 'RUN').map((i) => i.args)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^npm ci\b/), 'npm run build']),
      );
      const runtimeRuns = find(runtime, 'RUN').map((i) => i.args);
      expect(runtimeRuns.some((args) => /^npm ci\b.*--omit=dev/.test(args))).toBe(true);
      expect(runtimeRuns.some((args) => /npm run build/.test(args))).toBe(false);
      expect(find(runtime, 'COPY').map((i) => i.args)).toContain('--from=build /app/dist ./dist');
      const users = find(runtime, 'USER').map((i) => i.args);
      expect(users[users.length - 1]).toBe('node');
    });

    it('exposes the default port and health-checks /health/live, which answers', async () => {
      expect(find(runtime, 'EXPOSE').map((i) => i.args)).toEqual([String(DEFAULTS.port)]);
      const env = find(runtime, 'ENV').map((i) => i.args);
      expect(env).toContain(`SLUICE_PORT=${DEFAULTS.port}`);
      const healthcheck = find(runtime, 'HEALTHCHECK')[0]?.args ?? '';
      expect(healthcheck).toContain("fetch('http://127.0.0.1:' + (process.env.SLUICE_PORT || 8080) + '/health/live')");
      await expectRoute('/health/live');
    });

    it('runs the entry point npm run build writes (the one npm start runs)', () => {
      const cmd = JSON.parse(find(runtime, 'CMD')[0]?.args ?? '[]') as string[];
      expect(cmd[0]).toBe('node');
      expect(packageJson.scripts.start).toBe(`node ${cmd[1]}`);
      expect(existsSync(join(ROOT, cmd[1]))).toBe(true);
    });

    it('dist/ holds the Lua scripts the store loads', () => {
      const source = join(ROOT, 'libs/store/src/redis/lua');
      const built = join(ROOT, 'dist/libs/store/src/redis/lua');
      const lua = (dir: string) =>
        readdirSync(dir, { recursive: true, encoding: 'utf8' })
          .filter((file) => file.endsWith('.lua'))
          .sort();
      expect(lua(source).length).toBeGreaterThan(0);
      expect(lua(built)).toEqual(lua(source));
    });

    it('everything dist/ requires is a production dependency (npm ci --omit=dev installs it)', () => {
      const required = new Set<string>();
      const walk = (dir: string) => {
        for (const entry of readdirSync(dir)) {
          const path = join(dir, entry);
          if (statSync(path).isDirectory()) walk(path);
          else if (path.endsWith('.js')) {
            for (const [, specifier] of readFileSync(path, 'utf8').matchAll(/require\("([^"]+)"\)/g)) {
              if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
              const name = specifier.startsWith('@')
                ? specifier.split('/').slice(0, 2).join('/')
                : specifier.split('/')[0];
              if (!builtinModules.includes(name)) required.add(name);
            }
          }
        }
      };
      walk(join(ROOT, 'dist/apps/coordinator'));
      walk(join(ROOT, 'dist/libs'));
      expect(required.size).toBeGreaterThan(0);
      expect([...required].filter((name) => !(name in packageJson.dependencies))).toEqual([]);
    });

    it('Dockerfile.dockerignore lets in everything the Dockerfile copies from the context', () => {
      const ignore = readFileSync(join(DEPLOY, 'Dockerfile.dockerignore'), 'utf8').split('\n');
      const sources = stages
        .flat()
        .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
        .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
      expect(sources.length).toBeGreaterThan(0);
      for (const source of sources) {
        expect(existsSync(join(ROOT, source))).toBe(true);
        expect(ignore).toContain(`!${source}`);
      }
    });
  });

  describe('docker-compose.yml', () => {
    const compose = yamlFile(join(DEPLOY, 'docker-compose.yml'));
    const services = compose.services as Record<string, Doc>;
    const coordinators = Object.entries(services).filter(([, service]) => service.build);
    const prometheusConfig = yamlFile(join(PROMETHEUS_DIR, 'prometheus.yml'));

    it('runs Redis, two coordinators, Prometheus and Grafana', () => {
      expect(Object.keys(services).sort()).toEqual([
        'coordinator-1',
        'coordinator-2',
        'grafana',
        'prometheus',
        'redis',
      ]);
      expect(coordinators.map(([name]) => name).sort()).toEqual(['coordinator-1', 'coordinator-2']);
    });

    it.each(coordinators)(
      '%s: builds deploy/Dockerfile, and its environment is variables the service reads',
      (_name, service) => {
        expect(existsSync(join(DEPLOY, service.build.context, service.build.dockerfile))).toBe(true);
        expect(join(DEPLOY, service.build.context)).toBe(ROOT);
        expect(service.image).toBe(`sluice:${packageJson.version}`);
        const env = service.environment as Record<string, string>;
        for (const name of Object.keys(env))
          expect({ name, known: knownVariable(name) }).toEqual({ name, known: true });
        // Files the variables name are mounted: policies from the repository, tokens as a secret.
        const policies = (service.volumes as string[]).find((v) => v.split(':')[1] === env.SLUICE_POLICIES_FILE);
        expect(policies).toBeDefined();
        expect(() => readPoliciesFile(join(DEPLOY, policies!.split(':')[0]))).not.toThrow();
        expect(service.secrets).toHaveLength(1);
        expect(env.SLUICE_TOKENS_FILE).toBe(`/run/secrets/${service.secrets[0]}`);
        const tokensFile = join(DEPLOY, compose.secrets[service.secrets[0]].file);
        expect(parseTokens(readFileSync(tokensFile, 'utf8'), 'SLUICE_TOKENS_FILE').length).toBeGreaterThan(0);
        // The values pass the service's own validation (tokens on: it listens on every interface).
        const config = loadConfig({ ...env, SLUICE_TOKENS_FILE: tokensFile });
        expect(config.host).toBe('0.0.0.0');
        expect(config.redisUrl).toBe('redis://redis:6379');
        expect(Object.keys(services)).toContain(new URL(config.redisUrl!).hostname);
        // Published ports lead to the port the service listens on.
        for (const port of service.ports as string[]) expect(Number(port.split(':').pop())).toBe(config.port);
      },
    );

    it('runs Redis with AOF (appendfsync everysec) on a volume, so a restart keeps the state', () => {
      const args = redisArguments(services.redis.command as string[]);
      expect(args).toMatchObject({ appendonly: 'yes', appendfsync: 'everysec' });
      expect(services.redis.volumes).toEqual([expect.stringMatching(/^redis-data:\/data$/)]);
      expect(compose.volumes).toHaveProperty('redis-data');
    });

    it("Prometheus scrapes both coordinators' /metrics under job sluice and loads the rule file", async () => {
      const prometheus = services.prometheus;
      const configPath = (prometheus.command as string[]).find((a) => a.startsWith('--config.file='))!.split('=')[1];
      const mounts = new Map((prometheus.volumes as string[]).map((v) => [v.split(':')[1], v.split(':')[0]]));
      expect(mounts.get(configPath)).toBe('./prometheus/prometheus.yml');
      for (const ruleFile of prometheusConfig.rule_files as string[]) {
        expect(mounts.get(posix.join(posix.dirname(configPath), ruleFile))).toBe(`./prometheus/${ruleFile}`);
        expect(existsSync(join(PROMETHEUS_DIR, ruleFile))).toBe(true);
      }
      const [job] = prometheusConfig.scrape_configs as Doc[];
      expect(job.job_name).toBe(JOB);
      expect(job.metrics_path ?? '/metrics').toBe('/metrics');
      await expectRoute('/metrics');
      const targets = (job.static_configs as Doc[]).flatMap((c) => c.targets as string[]);
      expect(targets.sort()).toEqual(coordinators.map(([name]) => `${name}:${DEFAULTS.port}`).sort());
      const result = promtool(['check', 'config', join(PROMETHEUS_DIR, 'prometheus.yml')]);
      expect({ status: result.status, output: result.output }).toMatchObject({ status: 0 });
    });

    it('Grafana is provisioned with the Prometheus service and the dashboard', () => {
      const grafana = services.grafana;
      const mounts = new Map((grafana.volumes as string[]).map((v) => [v.split(':')[1], v.split(':')[0]]));
      expect(mounts.get('/etc/grafana/provisioning')).toBe('./grafana/provisioning');
      const datasources = yamlFile(join(DEPLOY, 'grafana/provisioning/datasources/prometheus.yml'))
        .datasources as Doc[];
      expect(datasources.map((d) => [d.type, d.url])).toEqual([['prometheus', 'http://prometheus:9090']]);
      const [provider] = yamlFile(join(DEPLOY, 'grafana/provisioning/dashboards/sluice.yml')).providers as Doc[];
      const dashboard = [...mounts].find(([target]) => posix.dirname(target) === provider.options.path);
      expect(dashboard?.[1]).toBe('./grafana/sluice.json');
    });
  });

  describe('Grafana dashboard (deploy/grafana/sluice.json)', () => {
    const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana/sluice.json'), 'utf8')) as Doc;
    const panels = (dashboard.panels as Doc[]).filter((panel) => panel.type !== 'row');
    const expressions = panels.flatMap((panel) =>
      (panel.targets as Doc[]).map((target) => [panel.title, target] as const),
    );

    it('takes its data source from a variable, in every panel and query', () => {
      const variables = dashboard.templating.list as Doc[];
      expect(variables.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
      for (const panel of panels) expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const [, target] of expressions)
        expect(target.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const variable of variables.filter((v) => v.type === 'query')) {
        expect(variable.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      }
    });

    it('shows budgets, breaker states over time, decision latency and store errors', () => {
      const types = new Map(panels.map((panel) => [panel.title as string, panel.type as string]));
      expect(types.get('Budget refusals (share of retries reaching the budget)')).toBe('timeseries');
      expect(types.get('Breaker state over time')).toBe('state-timeline');
      expect(types.get('Decision latency (retry and admit)')).toBe('timeseries');
      expect(types.get('Store errors by operation')).toBe('timeseries');
    });

    it.each(expressions.map(([title, target]) => [title, target.refId, target.expr as string]))(
      '%s (%s) selects metrics and labels the service exposes',
      (_title, _refId, expression) => {
        const { selectors, groupingLabels } = readExpression(expression);
        const labels = new Set([...TARGET_LABELS]);
        for (const selector of selectors) {
          if (selector.metric === 'up') continue;
          const family = familyOf(selector.metric, families);
          expect({ metric: selector.metric, known: family !== undefined }).toEqual({
            metric: selector.metric,
            known: true,
          });
          const own = [...families.get(family!)!, ...(selector.metric.endsWith('_bucket') ? ['le'] : [])];
          own.forEach((label) => labels.add(label));
          for (const matcher of selector.matchers) {
            const known = [...own, ...TARGET_LABELS].includes(matcher.label);
            expect({ metric: selector.metric, label: matcher.label, known }).toEqual({
              metric: selector.metric,
              label: matcher.label,
              known: true,
            });
          }
        }
        for (const label of groupingLabels) expect({ label, known: labels.has(label) }).toEqual({ label, known: true });
      },
    );
  });

  describe('Redis Cluster example (deploy/redis-cluster)', () => {
    const dir = join(DEPLOY, 'redis-cluster');
    const conf = redisConf(readFileSync(join(dir, 'redis-cluster.conf'), 'utf8'));
    const compose = yamlFile(join(dir, 'docker-compose.yml'));

    it('keeps healthy masters answering through a failover, tuned to fail over in seconds, with AOF', () => {
      expect(conf).toMatchObject({
        'cluster-enabled': 'yes',
        'cluster-require-full-coverage': 'no',
        appendonly: 'yes',
        appendfsync: 'everysec',
        'maxmemory-policy': 'noeviction',
      });
      expect(Number(conf['cluster-node-timeout'])).toBeLessThanOrEqual(5000);
    });

    it('starts 3 masters with a replica each, every node on that configuration', () => {
      const nodes = Object.entries(compose.services as Record<string, Doc>).filter(([name]) =>
        name.startsWith('redis-'),
      );
      expect(nodes).toHaveLength(6);
      for (const [, node] of nodes) {
        expect(node.volumes).toEqual(['./redis-cluster.conf:/usr/local/etc/redis/redis.conf:ro']);
      }
      expect(compose.services['cluster-create'].command).toContain('--cluster-replicas 1');
    });
  });

  describe('Kubernetes manifests (deploy/kubernetes)', () => {
    const files = readdirSync(KUBERNETES).filter((file) => file.endsWith('.yaml'));
    const documents = files
      .filter((file) => file !== 'kustomization.yaml')
      .flatMap((file) =>
        parseAllDocuments(readFileSync(join(KUBERNETES, file), 'utf8')).map((doc) => doc.toJS() as Doc),
      );
    const byKind = (kind: string): Doc[] => documents.filter((doc) => doc.kind === kind);
    const one = (kind: string): Doc => {
      const found = byKind(kind);
      expect(found).toHaveLength(1);
      return found[0];
    };
    const matchesSelector = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([key, value]) => labels[key] === value);

    it('has every kind the deployment needs, each listed in kustomization.yaml', () => {
      expect(documents.map((doc) => doc.kind).sort()).toEqual(
        [
          'ConfigMap',
          'Deployment',
          'HorizontalPodAutoscaler',
          'PodDisruptionBudget',
          'PrometheusRule',
          'Secret',
          'Service',
          'ServiceMonitor',
        ].sort(),
      );
      const kustomization = yamlFile(join(KUBERNETES, 'kustomization.yaml'));
      expect([...(kustomization.resources as string[])].sort()).toEqual(
        [...files.filter((f) => f !== 'kustomization.yaml'), 'redis'].sort(),
      );
      expect(kustomization.images).toEqual([{ name: 'sluice', newTag: packageJson.version }]);
    });

    it('the generated PrometheusRule and policies ConfigMap are in sync (npm run deploy:manifests)', () => {
      // Fails naming the stale files; byte-for-byte comparison with a fresh generation.
      expect(() =>
        execFileSync(process.execPath, [join(DEPLOY, 'generate-manifests.mjs'), '--check'], { stdio: 'pipe' }),
      ).not.toThrow();
      expect(one('PrometheusRule').spec.groups).toEqual(yamlFile(RULES_FILE).groups);
      expect(one('ConfigMap').data['policies.yaml']).toBe(readFileSync(join(DEPLOY, 'policies.example.yaml'), 'utf8'));
    });

    it('the PrometheusRule passes promtool check rules', () => {
      const path = tempFile('prometheus-rule.rules.yml', JSON.stringify({ groups: one('PrometheusRule').spec.groups }));
      const result = promtool(['check', 'rules', path]);
      expect({ status: result.status, output: result.output }).toMatchObject({ status: 0 });
    });

    describe('Deployment', () => {
      const deployment = one('Deployment');
      const pod = deployment.spec.template.spec as Doc;
      const [container] = pod.containers as Doc[];
      const env = Object.fromEntries((container.env as Doc[]).map((e) => [e.name as string, e.value as string]));
      const ports = new Map((container.ports as Doc[]).map((p) => [p.name as string, p.containerPort as number]));

      it('runs the image of this version, as a non-root user, with resources set', () => {
        expect(container.image).toBe(`sluice:${packageJson.version}`);
        expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number) });
        expect(pod.securityContext.runAsUser).not.toBe(0);
        expect(container.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
        });
        expect(container.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
        expect(container.resources.limits.memory).toEqual(expect.any(String));
        expect(matchesSelector(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(
          true,
        );
      });

      it('listens on the port its container declares', () => {
        expect(ports.get('http')).toBe(DEFAULTS.port);
        expect(Number(env.SLUICE_PORT ?? DEFAULTS.port)).toBe(ports.get('http'));
      });

      it('every environment variable is one the service reads, and the values pass its validation', () => {
        for (const name of Object.keys(env))
          expect({ name, known: knownVariable(name) }).toEqual({ name, known: true });
        const config = loadConfig({ ...env, SLUICE_TOKENS_FILE: tempFile('tokens.json', VALID_TOKENS) });
        expect(config.host).toBe('0.0.0.0');
        expect(config.port).toBe(ports.get('http'));
      });

      it('probes /health/live and /health/ready on the http port, and both answer', async () => {
        expect(container.livenessProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
        expect(container.startupProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
        expect(container.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
        await expectRoute('/health/live');
        await expectRoute('/health/ready');
      });

      it('mounts the tokens Secret and the policies ConfigMap where the variables point', () => {
        const volumes = new Map((pod.volumes as Doc[]).map((v) => [v.name as string, v]));
        const mountOf = (file: string) => {
          const mount = (container.volumeMounts as Doc[]).find((m) => m.mountPath === dirname(file));
          expect({ file, mounted: Boolean(mount?.readOnly) }).toEqual({ file, mounted: true });
          return volumes.get(mount!.name)!;
        };
        const secret = one('Secret');
        expect(mountOf(env.SLUICE_TOKENS_FILE).secret.secretName).toBe(secret.metadata.name);
        const tokens = secret.stringData[basename(env.SLUICE_TOKENS_FILE)] as string;
        // Placeholders, on purpose too short: a pod started with them stops at boot.
        expect(() => parseTokens(tokens, 'SLUICE_TOKENS_FILE')).toThrow(/secret must be at least 16 characters/);
        expect((JSON.parse(tokens) as Doc[]).map((t) => t.role).sort()).toEqual(['admin', 'client']);

        const configMap = one('ConfigMap');
        expect(mountOf(env.SLUICE_POLICIES_FILE).configMap.name).toBe(configMap.metadata.name);
        const policies = tempFile('policies.yaml', configMap.data[basename(env.SLUICE_POLICIES_FILE)]);
        expect(() => readPoliciesFile(policies)).not.toThrow();
      });

      it('gives the drain time to finish: preStop, then at most the shutdown timeout, within the grace period', () => {
        const main = readFileSync(join(ROOT, 'apps/coordinator/src/main.ts'), 'utf8');
        const shutdownMs = Number(/const SHUTDOWN_TIMEOUT_MS = ([\d_]+);/.exec(main)![1].replace(/_/g, ''));
        const preStop = container.lifecycle.preStop.exec.command as string[];
        expect(preStop[0]).toBe('sleep');
        expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(Number(preStop[1]) * 1000 + shutdownMs);
      });
    });

    it('the Service selects the pods and exposes their http port under the job name the rules use', () => {
      const service = one('Service');
      const podLabels = one('Deployment').spec.template.metadata.labels;
      expect(service.metadata.name).toBe(JOB); // the ServiceMonitor's targets get job="<Service name>"
      expect(matchesSelector(service.spec.selector, podLabels)).toBe(true);
      expect(service.spec.ports).toEqual([
        expect.objectContaining({ name: 'http', targetPort: 'http', port: DEFAULTS.port }),
      ]);
    });

    it('the ServiceMonitor scrapes /metrics on that Service port', async () => {
      const monitor = one('ServiceMonitor');
      const service = one('Service');
      expect(matchesSelector(monitor.spec.selector.matchLabels, service.metadata.labels)).toBe(true);
      expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'http', path: '/metrics' })]);
      expect(monitor.spec.jobLabel).toBeUndefined();
      await expectRoute('/metrics');
    });

    describe('Redis (deploy/kubernetes/redis)', () => {
      const dir = join(KUBERNETES, 'redis');
      const redisDocs = readdirSync(dir)
        .filter((file) => file !== 'kustomization.yaml')
        .map((file) => yamlFile(join(dir, file)));
      const statefulSet = redisDocs.find((doc) => doc.kind === 'StatefulSet')!;
      const service = redisDocs.find((doc) => doc.kind === 'Service')!;

      it('lists its files in its kustomization.yaml', () => {
        expect([...(yamlFile(join(dir, 'kustomization.yaml')).resources as string[])].sort()).toEqual(
          readdirSync(dir)
            .filter((file) => file !== 'kustomization.yaml')
            .sort(),
        );
      });

      it('runs Redis with AOF (appendfsync everysec), no eviction, its data on a volume claim', () => {
        const [container] = statefulSet.spec.template.spec.containers;
        const args = redisArguments(container.args as string[]);
        expect(args).toMatchObject({ appendonly: 'yes', appendfsync: 'everysec', 'maxmemory-policy': 'noeviction' });
        const [claim] = statefulSet.spec.volumeClaimTemplates;
        expect(container.volumeMounts).toEqual([{ name: claim.metadata.name, mountPath: args.dir }]);
      });

      it('is the Service the coordinators reach (the host and port of SLUICE_REDIS_URL)', () => {
        const env = one('Deployment').spec.template.spec.containers[0].env as Array<{ name: string; value: string }>;
        const url = new URL(env.find((variable) => variable.name === 'SLUICE_REDIS_URL')!.value);
        expect(service.metadata.name).toBe(url.hostname);
        expect(service.spec.ports[0].port).toBe(Number(url.port));
        expect(matchesSelector(service.spec.selector, statefulSet.spec.template.metadata.labels)).toBe(true);
      });
    });

    it('the PodDisruptionBudget and HorizontalPodAutoscaler target the Deployment and keep a replica up', () => {
      const deployment = one('Deployment');
      const podLabels = deployment.spec.template.metadata.labels;
      const pdb = one('PodDisruptionBudget');
      expect(matchesSelector(pdb.spec.selector.matchLabels, podLabels)).toBe(true);
      const hpa = one('HorizontalPodAutoscaler');
      expect(hpa.spec.scaleTargetRef).toEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: deployment.metadata.name,
      });
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(pdb.spec.maxUnavailable).toBeLessThan(hpa.spec.minReplicas);
      expect(deployment.spec.replicas).toBe(hpa.spec.minReplicas);
      // Utilization targets need CPU requests.
      expect(hpa.spec.metrics[0].resource.name).toBe('cpu');
      expect(deployment.spec.template.spec.containers[0].resources.requests.cpu).toBeDefined();
    });
  });
});
