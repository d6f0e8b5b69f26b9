import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

// Crash recovery with a holder that really dies: a child process (the BUILT SDK, dist/) claims
// an idempotency key and is SIGKILLed mid-work. After its lease the next claim is recovered, and
// the dead holder's token is fenced (409 lease_lost). Run `npm run build` first (npm test does).

const SCRIPT = join(__dirname, '../example/crash-holder.mjs');
const BUILT_SDK = join(__dirname, '../../dist/libs/client/src/index.js');
const NS = 'shop';
/** Long enough that the checks made while the dead holder's lease is live cannot race it. */
const LEASE_MS = 1000;
/** The most the polling for the end of a lease may take. */
const POLL_DEADLINE_MS = 5000;

const BINARY = randomBytes(1024);
const STORED = {
  status: 201,
  headers: { 'content-type': 'application/octet-stream', 'x-order-id': 'ord_successor' },
  body: BINARY.toString('base64'),
  bodyEncoding: 'base64',
};
const LATE = { status: 201, headers: {}, body: 'the dead holder', bodyEncoding: 'utf8' };

type HolderEvent = { event: string; pid: number } & Record<string, unknown>;
type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** A child running test/example/crash-holder.mjs: its JSON-line events, its exit. */
class Holder {
  readonly child: ChildProcess;
  readonly events: HolderEvent[] = [];
  readonly exited: Promise<Exit>;
  private output = '';
  private buffered = '';
  private readonly listeners = new Set<() => void>();

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [SCRIPT, ...args], { stdio: 'pipe' });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.output += chunk;
      this.buffered += chunk;
      const lines = this.buffered.split('\n');
      this.buffered = lines.pop() ?? '';
      for (const line of lines.filter(Boolean)) this.events.push(JSON.parse(line) as HolderEvent);
      for (const listener of this.listeners) listener();
    });
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk));
    this.child.on('exit', () => this.listeners.forEach((listener) => listener()));
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The `n`th event named `name` (1-based), waiting for it; fails if the process ends first. */
  next(name: string, n = 1, timeoutMs = 10_000): Promise<HolderEvent> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.events.filter((e) => e.event === name)[n - 1];
        if (found) return done(() => resolve(found));
        if (!this.alive) return done(() => reject(new Error(`the holder exited before "${name}":\n${this.output}`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`no "${name}" from the holder in ${timeoutMs} ms:\n${this.output}`))),
        timeoutMs,
      );
      const done = (settle: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        settle();
      };
      this.listeners.add(check);
      check();
    });
  }

  count(name: string): number {
    return this.events.filter((e) => e.event === name).length;
  }

  /** SIGKILL: no handler, no shutdown hook, no completion; resolves with how it ended. */
  async kill(): Promise<Exit> {
    if (this.alive) this.child.kill('SIGKILL');
    return this.exited;
  }
}

interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
  json: () => Record<string, unknown>;
}

async function send(url: string, init: RequestInit): Promise<Answer> {
  const response = await fetch(url, init);
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, bytes, json: () => JSON.parse(bytes.toString('utf8')) };
}

/** A 409 in_flight, with a Retry-After that says the same as its retryAfterMs. */
function expectInFlight(answer: Answer): number {
  expect(answer.status).toBe(409);
  expect(answer.json()).toMatchObject({ statusCode: 409, code: 'in_flight', retryAfterMs: expect.any(Number) });
  const retryAfterMs = answer.json().retryAfterMs as number;
  expect(retryAfterMs).toBeGreaterThan(0);
  expect(retryAfterMs).toBeLessThanOrEqual(LEASE_MS);
  expect(answer.headers.get('retry-after')).toBe(String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  return retryAfterMs;
}

/**
 * Asks again until the answer is no longer 409 in_flight, waiting what each 409 says
 * (retryAfterMs, the precise form of its Retry-After), within POLL_DEADLINE_MS.
 */
async function untilNotInFlight(ask: () => Promise<Answer>, first: Answer): Promise<{ answer: Answer; polls: number }> {
  const deadline = Date.now() + POLL_DEADLINE_MS;
  let answer = first;
  let polls = 0;
  while (answer.status === 409) {
    const wait = expectInFlight(answer);
    if (Date.now() + wait > deadline) throw new Error(`still in flight after ${polls} polls`);
    // The holder's lease runs out on Redis's clock (TIME): wait what the answer says it needs.
    await delay(wait);
    answer = await ask();
    polls++;
  }
  return { answer, polls };
}

describe('idempotency crash recovery with a holder process that is really killed (Redis, built SDK)', () => {
  const holders: Holder[] = [];
  let coordinator: TestCoordinator;

  const holder = (args: string[]) => {
    const started = new Holder(args);
    holders.push(started);
    return started;
  };
  const newKey = () => `crash-${randomBytes(6).toString('hex')}`;
  const keyUrl = (key: string) => `${coordinator.url}/v1/${NS}/idempotency/${key}`;
  const json = { 'content-type': 'application/json' };
  const claim = (key: string) =>
    send(`${keyUrl(key)}/claim`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ fingerprint: 'sha256:crash', leaseMs: LEASE_MS }),
    });
  const complete = (key: string, token: string, response: object) =>
    send(keyUrl(key), { method: 'PUT', headers: json, body: JSON.stringify({ token, response }) });
  const view = (key: string) => send(keyUrl(key), { method: 'GET' });

  beforeAll(async () => {
    if (!existsSync(BUILT_SDK)) throw new Error(`${BUILT_SDK} is missing: run npm run build first (npm test does)`);
    coordinator = await testCoordinator({ redis: true, label: 'idem-crash', listen: true });
  });

  afterAll(async () => {
    await Promise.all(holders.map((h) => h.kill()));
    await coordinator?.close();
  });

  it('a killed claim holder blocks the key until its lease ends; then the claim is recovered and its token fenced', async () => {
    const key = newKey();
    const dead = holder(['claim', coordinator.url, NS, key, String(LEASE_MS)]);
    const claimed = await dead.next('claimed');
    expect(claimed).toMatchObject({ key, token: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/), recovered: false });
    await dead.next('working');

    expect(await dead.kill()).toEqual({ code: null, signal: 'SIGKILL' });

    // Nothing completed or released the key: it is still in flight under the dead holder's lease.
    const held = await view(key);
    expect(held.status).toBe(200);
    expect(held.json()).toMatchObject({ state: 'in_flight', leaseExpiresAt: claimed.leaseExpiresAt });

    const blocked = await claim(key);
    expectInFlight(blocked);
    const { answer: successor, polls } = await untilNotInFlight(() => claim(key), blocked);
    expect(successor.status).toBe(201);
    expect(successor.json()).toEqual({
      state: 'claimed',
      token: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      recovered: true,
      leaseExpiresAt: expect.any(Number),
      durable: false,
    });
    const token = successor.json().token as string;
    expect(token).not.toBe(claimed.token);
    expect(successor.json().leaseExpiresAt).toBeGreaterThanOrEqual(claimed.leaseExpiresAt as number);
    expect(polls).toBeGreaterThanOrEqual(1);

    // The dead holder's completion, arriving late (a stuck socket, a replayed message): fenced.
    const late = await complete(key, claimed.token as string, LATE);
    expect(late.status).toBe(409);
    expect(late.json()).toMatchObject({ code: 'lease_lost', details: [{ field: 'token' }] });

    const done = await complete(key, token, STORED);
    expect(done.status).toBe(204);
    expect(done.bytes).toHaveLength(0);

    // After the completion the old token still cannot overwrite, nor release, the key.
    expect((await complete(key, claimed.token as string, LATE)).json()).toMatchObject({ code: 'lease_lost' });
    const release = await send(`${keyUrl(key)}?token=${encodeURIComponent(claimed.token as string)}`, {
      method: 'DELETE',
    });
    expect(release.status).toBe(409);
    expect(release.json()).toMatchObject({ code: 'lease_lost' });

    const replay = await claim(key);
    expect(replay.status).toBe(200);
    expect(replay.json()).toEqual({ state: 'completed', response: STORED });
    const response = replay.json().response as typeof STORED;
    expect(Buffer.from(response.body, 'base64').equals(BINARY)).toBe(true);
    expect((await view(key)).json()).toMatchObject({ state: 'completed' });
  });

  it('an app instance killed mid-handler: a retry to another instance runs the handler as recovered and stores its answer', async () => {
    const [dying, survivor] = [
      holder(['serve', coordinator.url, NS, String(LEASE_MS), 'hang']),
      holder(['serve', coordinator.url, NS, String(LEASE_MS), 'answer']),
    ];
    const [dyingUrl, survivorUrl] = (await Promise.all([dying.next('listening'), survivor.next('listening')])).map(
      (e) => e.url as string,
    );
    const key = newKey();
    const order = (base: string) =>
      send(`${base}/orders`, {
        method: 'POST',
        headers: { ...json, 'idempotency-key': key },
        body: JSON.stringify({ sku: 'A-1', qty: 2 }),
      });

    const abandoned = order(dyingUrl);
    abandoned.catch(() => {}); // awaited below
    expect(await dying.next('handling')).toMatchObject({ run: 1, key, recovered: false });
    expect((await view(key)).json()).toMatchObject({ state: 'in_flight' });

    expect(await dying.kill()).toEqual({ code: null, signal: 'SIGKILL' });
    await expect(abandoned).rejects.toThrow(); // the caller saw the connection die, no answer

    // The retry, to the other instance: refused while the dead instance's lease is live, without running.
    const blocked = await order(survivorUrl);
    expectInFlight(blocked);
    expect(survivor.count('handling')).toBe(0);
    const { answer: recovered } = await untilNotInFlight(() => order(survivorUrl), blocked);
    expect(recovered.status).toBe(201);
    expect(recovered.headers.get('idempotent-replayed')).toBeNull();
    expect(recovered.json()).toMatchObject({ recovered: true, body: { sku: 'A-1', qty: 2 } });
    expect(await survivor.next('handling')).toMatchObject({ run: 1, key, recovered: true });

    // Its answer is what the key now holds: replayed byte for byte, the handler not run again.
    expect((await view(key)).json()).toMatchObject({ state: 'completed' });
    const replay = await order(survivorUrl);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.bytes.equals(recovered.bytes)).toBe(true);
    expect(replay.headers.get('x-order-nonce')).toBe(recovered.headers.get('x-order-nonce'));
    expect(replay.headers.get('content-type')).toBe(recovered.headers.get('content-type'));
    expect(survivor.count('handling')).toBe(1);
    expect(survivor.count('error')).toBe(0);
    expect(dying.count('handling')).toBe(1);
  });
});
