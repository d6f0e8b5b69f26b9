// The fleet a scenario runs against: one private Redis, two built coordinators with an admin and a
// client token, and a recording proxy in front of each. The client is given the proxies' URLs.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { freePorts, startCoordinator, startRedis } from './processes.mjs';
import { Traffic, startProxy } from './proxy.mjs';

export class Fleet {
  traffic = new Traffic();
  coordinators = [];
  proxies = [];
  adminToken = `conf-admin-${randomBytes(8).toString('hex')}`;
  clientToken = `conf-client-${randomBytes(8).toString('hex')}`;

  constructor(root) {
    this.main = join(root, 'dist/apps/coordinator/src/main.js');
  }

  async start() {
    this.redis = await startRedis();
    this.coordinators = await this.startPair();
    const proxyPorts = await freePorts(2);
    for (const [i, port] of proxyPorts.entries()) {
      this.proxies.push(await startProxy(i, port, this.coordinators[i].url, this.traffic));
    }
    return this;
  }

  /** The coordinators' URLs as the client sees them: behind the proxies, in order. */
  get baseUrls() {
    return this.proxies.map((proxy) => proxy.url);
  }

  /** Two coordinators on spare ports, one after the other (each boot is CPU-bound). */
  async startPair() {
    const env = {
      SLUICE_REDIS_URL: this.redis.url,
      SLUICE_TOKENS: JSON.stringify([
        { id: 'conformance-admin', secret: this.adminToken, role: 'admin', namespaces: ['*'] },
        { id: 'conformance-client', secret: this.clientToken, role: 'client', namespaces: ['*'] },
      ]),
      SLUICE_SSE_HEARTBEAT_MS: '1000',
      // The suite checks clients, not the store's timing: a loaded machine must not turn a slow
      // Redis answer into a 503 that no scenario asked for.
      SLUICE_STORE_TIMEOUT_MS: '1000',
    };
    const pair = [];
    try {
      for (const port of await freePorts(2)) pair.push(await startCoordinator(this.main, port, env));
    } catch (error) {
      await Promise.all(pair.map((coordinator) => coordinator.kill()));
      throw error;
    }
    return pair;
  }

  /**
   * Boots the pair that will replace the coordinators after a kill, before the scenario starts (a
   * boot takes seconds, and an outage must not last longer than the scenario says). Not in the
   * background of other scenarios: a boot's CPU would disturb their timing.
   */
  async prepareSpares() {
    this.spares ??= await this.startPair();
  }

  /** Both coordinators killed by PID, and the proxies stop listening: the client's connections are refused. */
  async killCoordinators() {
    await Promise.all(this.coordinators.map((coordinator) => coordinator.kill()));
    await Promise.all(this.proxies.map((proxy) => proxy.stop()));
  }

  /** The coordinators back (the spares, booted beforehand, or a new pair), the proxies listening again in front of them. */
  async restartCoordinators() {
    const pair = this.spares ?? (await this.startPair());
    this.spares = undefined;
    this.coordinators = pair;
    await Promise.all(this.proxies.map((proxy, i) => proxy.start(pair[i].url)));
  }

  /** Whether both coordinators run (a scenario that killed them and failed half-way may leave them down). */
  get running() {
    return this.coordinators.length === 2 && this.coordinators.every((c) => c.child.exitCode === null);
  }

  /**
   * A request to the first coordinator itself (not through a proxy: it is not the client's
   * traffic). A 503 is asked again a few times: the harness's own set-up is not under test.
   */
  async request(method, path, body, token = this.adminToken) {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(`${this.coordinators[0].url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      if (response.ok) return text ? JSON.parse(text) : undefined;
      if (response.status !== 503 || attempt >= 5)
        throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }

  async stop() {
    await Promise.all(this.proxies.map((proxy) => proxy.stop()));
    await Promise.all([...this.coordinators, ...(this.spares ?? [])].map((coordinator) => coordinator.kill()));
    await this.redis?.stop();
  }
}
