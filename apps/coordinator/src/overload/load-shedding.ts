import underPressure from '@fastify/under-pressure';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { overloaded } from '../common/api-error';
import type { SluiceConfig } from '../config/config';
import type { MetricsService } from '../metrics/metrics.service';

/**
 * The window the event-loop delay is averaged over (under-pressure's histogram, reset each
 * sample). A whole second, so one stall (a burst of connections parsed at once) averages out
 * against the ticks around it, while a loop that is behind all the time does not.
 */
const SAMPLE_INTERVAL_MS = 1000;

export type ShedReason = 'event_loop_delay' | 'in_flight';

/**
 * Sheds client requests (`/v1/…`) early, with 503 `overloaded` and `Retry-After`, when this
 * instance is past its capacity: the event loop's mean delay over the last second is above
 * `maxEventLoopDelayMs`, or `maxInFlight` client requests are already in progress. It runs first
 * in `onRequest`, before the body is read or the store is asked anything, so a shed request
 * changed nothing and the caller may try another instance. Health, metrics and the admin API
 * are never shed: the operator's tools and the probes keep working under load. Event streams
 * may be shed when they open but are not counted in progress (they stay open by design).
 */
export async function registerLoadShedding(
  app: NestFastifyApplication,
  config: Pick<SluiceConfig, 'maxEventLoopDelayMs' | 'maxInFlight'>,
  metrics: MetricsService,
): Promise<void> {
  // Registered with no limits of its own, under-pressure only samples; the hook below decides.
  await app.register(underPressure, { sampleInterval: SAMPLE_INTERVAL_MS });
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance & {
    memoryUsage(): { eventLoopDelay: number };
  };
  let inFlight = 0;
  const release = () => metrics.requestsInFlight.set(--inFlight);
  // The first samples cover the boot itself (modules loading, the app initialising): the delay
  // counts from the first whole sample after the app is ready.
  let delayCountsFrom = Infinity;
  fastify.addHook('onReady', async () => {
    delayCountsFrom = performance.now() + 2 * SAMPLE_INTERVAL_MS;
  });

  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!request.url.startsWith('/v1/')) return done();
    const delay = performance.now() >= delayCountsFrom ? fastify.memoryUsage().eventLoopDelay : 0;
    const reason = shedReason(delay, inFlight, config);
    if (reason) {
      metrics.overloadRejections.inc({ reason });
      const error = overloaded(reason === 'in_flight' ? `${inFlight} requests in progress` : 'event loop delayed');
      void reply.code(error.getStatus()).headers(error.headers).send(error.body());
      return;
    }
    if (!isEventStream(request)) {
      metrics.requestsInFlight.set(++inFlight);
      reply.raw.once('close', release);
    }
    done();
  });
}

/** Why a request arriving now is shed, if it is. */
export function shedReason(
  eventLoopDelayMs: number,
  inFlight: number,
  limits: Pick<SluiceConfig, 'maxEventLoopDelayMs' | 'maxInFlight'>,
): ShedReason | undefined {
  if (limits.maxEventLoopDelayMs > 0 && eventLoopDelayMs > limits.maxEventLoopDelayMs) return 'event_loop_delay';
  if (limits.maxInFlight > 0 && inFlight >= limits.maxInFlight) return 'in_flight';
  return undefined;
}

const EVENTS_PATH = /^\/v1\/[^/]+\/events(?:\?|$)/;

function isEventStream(request: FastifyRequest): boolean {
  return request.method === 'GET' && EVENTS_PATH.test(request.url);
}
