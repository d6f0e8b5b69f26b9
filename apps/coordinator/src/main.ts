import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import { createCoordinator, listenHost } from './bootstrap';
import { ConfigError, type ConfigProblem } from './config/config-error';
import { loadConfig, type SluiceConfig } from './config/config';
import { readPoliciesFile, type PoliciesFile } from './policies/policies-file';
import { EventStreamService } from './events/event-stream.service';
import { createLogger } from './logging/logger';

/** The signals this entry point shuts down on (a container runtime sends SIGTERM; Ctrl-C is SIGINT). */
const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;
/** Longest wait for the event streams to end (each unsubscribes from the store first). */
const STREAMS_TIMEOUT_MS = 2_000;
/** Longest wait for in-flight requests to finish once the listener is closed. */
const DRAIN_TIMEOUT_MS = 10_000;
/** Longest wait for the app's shutdown hooks (policy watches, store connections). */
const CLOSE_TIMEOUT_MS = 5_000;
/**
 * Connections accepted just before the listener closed get this long to send their request
 * before connections with no request in progress are closed (then again at this interval).
 */
const IDLE_CLOSE_INTERVAL_MS = 250;
/** Past this the process exits 1, whatever is still running (below Kubernetes' default 30 s grace). */
const SHUTDOWN_TIMEOUT_MS = 20_000;

async function main(): Promise<void> {
  let boot: BootConfig;
  try {
    boot = loadBootConfig();
  } catch (error) {
    if (error instanceof ConfigError) exitOnConfigError(error);
    throw error;
  }
  const { config } = boot;
  const frameworkHandlers = new Map(SHUTDOWN_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const app = await createCoordinator(config, boot.policies);
  // Nest's signal handlers (enableShutdownHooks, in bootstrap) close the HTTP server only after the
  // other shutdown hooks ran, and then re-raise the signal, so the process ends by the signal rather
  // than with 0. For SIGTERM and SIGINT the drain below takes their place; other signals keep them.
  for (const signal of SHUTDOWN_SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!frameworkHandlers.get(signal)?.has(listener)) process.removeListener(signal, listener);
    }
  }
  const shutdown = gracefulShutdown(app, new Logger('Shutdown'));
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, () => void shutdown(signal));
  const host = listenHost(config);
  await app.listen({ port: config.port, host });
  new Logger('Sluice').log(
    `listening on ${config.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${config.port}`,
  );
}

/**
 * The shutdown sequence, in order: stop accepting connections (new connects are refused; the
 * listener's backlog is the only thing dropped); end every event stream cleanly; let every request
 * already received finish, answering it with `Connection: close`; close connections that carry no
 * request; then close the app (its shutdown hooks close the store) and exit 0. Each step is bounded;
 * one that times out (requests still running after DRAIN_TIMEOUT_MS have their connections
 * destroyed) makes the exit code 1.
 */
function gracefulShutdown(app: NestFastifyApplication, logger: Logger): (signal: string) => Promise<void> {
  const server = app.getHttpServer() as Server;
  let draining = false;
  // Runs before the framework's handler: every response written during the drain closes its connection.
  server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
    if (draining) response.shouldKeepAlive = false;
  });
  let started: Promise<void> | undefined;

  const run = async (signal: string): Promise<void> => {
    const since = Date.now();
    const hardStop = setTimeout(() => {
      logger.error(`shutdown took longer than ${SHUTDOWN_TIMEOUT_MS} ms: exiting`);
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS);
    hardStop.unref();
    logger.log(`${signal}: shutting down: refusing new connections, draining requests in flight`);
    draining = true;
    // net.Server's close, not http.Server's: that one would also drop connections accepted a moment
    // ago whose request has not been read yet. The callback runs once every connection has ended.
    const closed = new Promise<void>((resolve) => Reflect.apply(NetServer.prototype.close, server, [() => resolve()]));
    let clean = await within(STREAMS_TIMEOUT_MS, app.get(EventStreamService).beforeApplicationShutdown(), {
      logger,
      what: 'ending event streams',
    });
    const idleCloser = setInterval(() => server.closeIdleConnections(), IDLE_CLOSE_INTERVAL_MS);
    const drained = await within(DRAIN_TIMEOUT_MS, closed, { logger, what: 'draining requests' });
    clearInterval(idleCloser);
    if (!drained) server.closeAllConnections();
    // Shutdown hooks: policy watches, event streams (already ended), the HTTP server (already
    // closed), the store's connections.
    const appClosed = await within(CLOSE_TIMEOUT_MS, app.close(), {
      logger,
      what: 'shutdown hooks (is the store reachable?)',
    });
    clean = clean && drained && appClosed;
    logger.log(`stopped in ${Date.now() - since} ms${clean ? '' : ' (not cleanly)'}`);
    clearTimeout(hardStop);
    process.exit(clean ? 0 : 1);
  };

  return (signal: string) => {
    if (!started) {
      started = run(signal).catch((error: unknown) => {
        logger.error(`shutdown failed: ${(error as Error).stack ?? String(error)}`);
        process.exit(1);
      });
    }
    return started;
  };
}

/** True when `work` resolves within `ms`; otherwise logs why not and returns false. */
async function within(ms: number, work: Promise<unknown>, log: { logger: Logger; what: string }): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    work.then(
      () => 'done' as const,
      (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
    ),
    new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms))),
  ]);
  clearTimeout(timer);
  if (outcome === 'done') return true;
  log.logger.warn(`${log.what}: ${outcome === 'timeout' ? `still running after ${ms} ms` : outcome.message}`);
  return false;
}

interface BootConfig {
  config: SluiceConfig;
  policies: PoliciesFile;
}

/** The variables and the policies file they name, every problem of both in one error, so one boot says all that is wrong. */
function loadBootConfig(): BootConfig {
  const problems: ConfigProblem[] = [];
  let config: SluiceConfig | undefined;
  let policies: PoliciesFile = { namespaces: {} };
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  const policiesFile = process.env.SLUICE_POLICIES_FILE;
  if (policiesFile) {
    try {
      policies = readPoliciesFile(policiesFile);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems);
    }
  }
  if (problems.length > 0 || !config) throw new ConfigError(problems);
  return { config, policies };
}

/** The log format before the configuration is read: `pretty` only when SLUICE_LOG_FORMAT says exactly that. */
const bootLogger = () => createLogger('info', process.env.SLUICE_LOG_FORMAT === 'pretty' ? 'pretty' : 'json');

/** Exit 78 (EX_CONFIG) with one log line (JSON by default) naming every bad variable. */
function exitOnConfigError(error: ConfigError): never {
  bootLogger().fatal(
    { context: 'Config', problems: error.problems },
    `invalid configuration: ${error.message}`,
  );
  process.exit(78);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) exitOnConfigError(error);
  bootLogger().fatal({ context: 'Sluice' }, `failed to start: ${(error as Error).stack ?? String(error)}`);
  process.exit(1);
});
