// Runs one driver through one scenario: a fresh namespace and its policy, the dependency's script
// and the proxies' faults, the driver with its run spec on stdin, the scenario's actions on the
// driver's events, then the checks.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { firstFailure, isAdmit, isAsk } from './checks.mjs';

const DEPENDENCY = 'payments-api';
const DEFAULT_TIMEOUT_MS = 20_000;
/** The client options every run spec carries; a scenario's `client` is laid over them. */
const CLIENT_DEFAULTS = { reportIntervalMs: 200, requestTimeoutMs: 1000, decisionTimeoutMs: 500 };

/**
 * Runs `driver` ({name, command, env}) through `scenario` against `fleet` and `dependency`:
 * `{pass, message, run}`.
 */
export async function runScenario({ root, fleet, dependency, driver, scenario }) {
  const namespace = `conf-${randomBytes(4).toString('hex')}`;
  const name = scenario.name;
  if (scenario.policy)
    await fleet.request('PUT', `/admin/v1/${namespace}/policies/deps/${DEPENDENCY}`, scenario.policy);
  dependency.reset(scenario.dependency ?? {});
  fleet.traffic.reset(faultsOf(scenario.coordinatorFaults ?? [], namespace));
  const act = (action) => perform(fleet, namespace, action);
  if (killsCoordinators(scenario)) await fleet.prepareSpares();
  for (const action of scenario.before ?? []) await act(action);

  const spec = {
    scenario: name,
    baseUrls: fleet.baseUrls,
    namespace,
    token: scenario.token === 'refused' ? 'conf-refused-token' : fleet.clientToken,
    reporter: `conf-${driver.name}-${name}`.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 128),
    dependency: DEPENDENCY,
    targetUrl: dependency.url,
    client: { ...CLIENT_DEFAULTS, ...scenario.client },
    steps: scenario.steps,
  };
  const outcome = await runDriver(
    root,
    driver,
    spec,
    scenario.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    scenario.actions ?? [],
    act,
  );
  if (!fleet.running) await fleet.restartCoordinators();

  const run = {
    namespace,
    dependencyName: DEPENDENCY,
    events: outcome.events,
    dependency: dependency.requests,
    traffic: fleet.traffic.entries.filter((entry) => entry.path.startsWith(`/v1/${namespace}/`)),
    budget: await budgetOf(fleet, namespace),
    stderr: outcome.stderr,
  };
  const broken = outcome.problem ?? missingEvents(outcome.events);
  const message = broken ?? firstFailure(scenario.expect ?? [], run);
  return { pass: message === null, message, run };
}

/** True when the scenario kills the coordinators (and so needs a spare pair to bring back). */
function killsCoordinators(scenario) {
  return (scenario.actions ?? []).some((action) => action.do === 'kill_coordinators');
}

/**
 * The proxies' faults: the nth request carrying retry asks (`ask`, 1-based, across both proxies),
 * or the nth admission (`admit`), gets the given answer.
 */
function faultsOf(faults, namespace) {
  let asks = 0;
  let admits = 0;
  return (entry) => {
    if (isAsk(entry, namespace)) {
      asks += 1;
      return faults.find((fault) => fault.ask === asks)?.answer ?? 'forward';
    }
    if (isAdmit(entry, namespace)) {
      admits += 1;
      return faults.find((fault) => fault.admit === admits)?.answer ?? 'forward';
    }
    return 'forward';
  };
}

async function perform(fleet, namespace, action) {
  if (action.delayMs) await new Promise((resolve) => setTimeout(resolve, action.delayMs));
  const dep = action.dep ?? DEPENDENCY;
  switch (action.do) {
    case 'report':
      return fleet.request(
        'POST',
        `/v1/${namespace}/reports`,
        {
          reporter: action.reporter ?? 'conformance-other',
          deps: [
            {
              dep,
              requests: action.requests ?? 1,
              successes: action.successes ?? 1,
              failures: action.failures ?? 0,
              slow: 0,
            },
          ],
        },
        fleet.clientToken,
      );
    case 'trip':
      return fleet.request('POST', `/admin/v1/${namespace}/breakers/${dep}/trip`, {
        reason: action.reason,
        ...(action.durationSeconds ? { durationSeconds: action.durationSeconds } : {}),
      });
    case 'reset':
      return fleet.request('POST', `/admin/v1/${namespace}/breakers/${dep}/reset`, {
        reason: action.reason ?? 'conformance',
      });
    case 'kill_coordinators':
      return fleet.killCoordinators();
    case 'restart_coordinators':
      return fleet.restartCoordinators();
    default:
      throw new Error(`unknown action ${action.do}`);
  }
}

async function budgetOf(fleet, namespace) {
  try {
    const { items } = await fleet.request('GET', `/admin/v1/${namespace}/budgets`);
    return items.find((item) => item.dependency === DEPENDENCY) ?? { retries: 0, requests: 0 };
  } catch {
    return undefined;
  }
}

function missingEvents(events) {
  if (!events.some((e) => e.event === 'ready')) return 'the driver never said ready';
  if (!events.some((e) => e.event === 'done')) return 'the driver never said done';
  return null;
}

/**
 * Starts the driver (its own process group, killed by its id on timeout), writes the spec to its
 * stdin, reads its events, runs the actions their events trigger (one after the other), and
 * resolves once it has exited and the actions have ended.
 */
function runDriver(root, driver, spec, timeoutMs, actions, act) {
  return new Promise((resolve) => {
    const child = spawn(driver.command[0], driver.command.slice(1), {
      cwd: root,
      env: { ...process.env, ...driver.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const events = [];
    let problem = null;
    let stderr = '';
    let buffered = '';
    let chain = Promise.resolve();
    const fail = (message) => (problem ??= message);
    const timer = setTimeout(() => {
      fail(`the driver did not finish within ${timeoutMs} ms`);
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    const onLine = (line) => {
      if (line.trim() === '') return;
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        return fail(`the driver printed a line that is not JSON: ${line.slice(0, 120)}`);
      }
      if (event === null || typeof event !== 'object' || Array.isArray(event))
        return fail(`not a JSON object: ${line.slice(0, 120)}`);
      event.receivedAt = Date.now();
      events.push(event);
      for (const action of actions) {
        const on = action.on ?? {};
        if (Object.entries(on).every(([key, value]) => event[key] === value)) {
          chain = chain.then(() => act(action)).catch((error) => fail(`action ${action.do} failed: ${error.message}`));
        }
      }
    };
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        onLine(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
      }
    });
    child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-20_000)));
    child.on('error', (error) => fail(`the driver could not start: ${error.message}`));
    child.stdin.on('error', () => undefined);
    child.stdin.end(JSON.stringify(spec));
    child.on('close', async (code, signal) => {
      clearTimeout(timer);
      if (buffered.trim()) onLine(buffered);
      if (code !== 0 && code !== null) fail(`the driver exited ${code}: ${lastLine(stderr)}`);
      if (signal && !problem) fail(`the driver was killed by ${signal}`);
      await chain;
      resolve({ events, problem, stderr });
    });
  });
}

function lastLine(text) {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1]?.slice(0, 200) ?? '';
}
