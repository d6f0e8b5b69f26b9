import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { overloaded } from '../common/api-error';
import type { SluiceConfig } from '../config/config';
import type { MetricsService } from '../metrics/metrics.service';
import { DELAY_SAMPLES, DELAY_SAMPLE_MS, EventLoopDelay } from './event-loop-delay';

export type ShedReason = 'event_loop_delay' | 'in_flight';

/**
 * Sheds client requests (`/v1/…`) early, with 503 `overloaded` and `Retry-After`, when this
 * instance is past its capacity: the event loop's mean delay has been above `maxEventLoopDelayMs`
 * in each of the last DELAY_SAMPLES seconds (event-loop-delay.ts), or `maxInFlight` client
 * requests are already in progress. It runs first
 * in `onRequest`, before the body is read or the store is asked anything, so a shed request
 * changed nothing and the caller may try another instance. Health, metrics and the admin API
 * are never shed: the operator's tools and the probes keep working under load. Event streams
 * may be shed when they open but are not counted in progress (they stay open by design).
 */
export function registerLoadShedding(
  app: NestFastifyApplication,
  config: Pick<SluiceConfig, 'maxEventLoopDelayMs' | 'maxInFlight'>,
  metrics: MetricsService,
): void {
  const fastify = app.getHttpAdapter().getInstance();
  const delay = config.maxEventLoopDelayMs > 0 ? new EventLoopDelay() : undefined;
  fastify.addHook('onClose', async () => delay?.stop());
  let inFlight = 0;
  const release = () => metrics.requestsInFlight.set(--inFlight);

  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!request.url.startsWith('/v1/')) return done();
    const reason = shedReason(delay?.ms ?? 0, inFlight, config);
    if (reason) {
      metrics.overloadRejections.inc({ reason });
      const error = overloaded(
        reason === 'in_flight'
          ? `${inFlight} requests in progress`
          : `event loop behind for ${(DELAY_SAMPLES * DELAY_SAMPLE_MS) / 1000} s`,
      );
      void reply.code(error.getStatus()).headers(error.headers).send(error.body());
      return;
    }
    if (!isEventStream(request)) {
      metrics.requestsInFlight.set(++inFlight);
      // A response closes once: `on` spares the wrapper `once` builds per request.
      reply.raw.on('close', release);
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
