import 'reflect-metadata';
import { Controller, Get, Headers, HttpException, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  NO_RETRY_HEADER,
  Sluice,
  currentContext,
  isGiveUpError,
  sluiceExpress,
  sluiceFastifyHook,
  type GiveUpEvent,
  type SluiceRequestContext,
} from '@sluice/client';
import { SluiceModule } from '@sluice/client/nest';
import type { TestCoordinator } from '../support/test-coordinator';
import { QUICK_BACKOFF, startShopCoordinator } from '../support/sdk';

/** What B saw of the deadline, one entry per request to B. */
const deadlinesAtB: number[] = [];
/** How long B works before it calls C: the deadline C gets must be shorter by at least that. */
const B_WORK_MS = 30;

/** What C saw: one entry per request, with the context its Nest interceptor set up. */
const seenByC: Array<{ attempt?: string; deadline?: string; context?: SluiceRequestContext }> = [];

@Controller('c')
class FailingController {
  @Get()
  fail(@Headers('sluice-attempt') attempt?: string, @Headers('sluice-deadline-ms') deadline?: string): never {
    seenByC.push({ attempt, deadline, context: currentContext() });
    throw new HttpException('C is down', 503);
  }
}

describe('retries at one layer: A → B → C, each using the SDK, C failing', () => {
  let coordinator: TestCoordinator;
  let c: INestApplication;
  let b: FastifyInstance;
  let a: Server;
  let cUrl: string;
  let bUrl: string;
  let aUrl: string;
  const clients: Sluice[] = [];
  const giveUps: Record<string, GiveUpEvent[]> = { a: [], b: [] };

  beforeAll(async () => {
    coordinator = await startShopCoordinator({ 'svc-b': QUICK_BACKOFF, 'svc-c': QUICK_BACKOFF });
    const client = (name: 'a' | 'b') => {
      // The coordinator shares this process's event loop with three services: its decisions may come
      // later than the default 50 ms here, and this suite is about deadlines and attempts, not that.
      const sluice = new Sluice({
        baseUrls: [coordinator.url],
        namespace: 'shop',
        reporter: name,
        logger: false,
        decisionTimeoutMs: 1000,
      });
      sluice.onGiveUp((event) => giveUps[name].push(event));
      clients.push(sluice);
      return sluice;
    };

    // C: NestJS (Fastify adapter) with SluiceModule, always 503.
    @Module({
      imports: [SluiceModule.forRoot({ baseUrls: [coordinator.url], namespace: 'shop', reporter: 'c', logger: false })],
      controllers: [FailingController],
    })
    class ServiceC {}
    c = await NestFactory.create(ServiceC, new FastifyAdapter(), { logger: false });
    await c.listen(0, '127.0.0.1');
    cUrl = await c.getUrl();

    // B: Fastify with the Sluice hook, calling C through the SDK (3 attempts).
    const sluiceB = client('b');
    b = Fastify();
    b.addHook('preHandler', sluiceFastifyHook());
    b.get('/b', async (request, reply) => {
      deadlinesAtB.push(Number(request.headers['sluice-deadline-ms']));
      await new Promise((resolve) => setTimeout(resolve, B_WORK_MS));
      try {
        const response = await sluiceB.fetch('svc-c', `${cUrl}/c`, { idempotent: true });
        return reply.code(response.status).send(await response.text());
      } catch (error) {
        return reply.code(503).send(isGiveUpError(error) ? error.reason : 'error');
      }
    });
    await b.listen({ port: 0, host: '127.0.0.1' });
    bUrl = `http://127.0.0.1:${(b.server.address() as AddressInfo).port}`;

    // A: Express with the Sluice middleware, calling B through the SDK (3 attempts).
    const sluiceA = client('a');
    const app = express();
    app.use(sluiceExpress());
    app.get('/a', async (_req, res) => {
      try {
        const response = await sluiceA.fetch('svc-b', `${bUrl}/b`, { idempotent: true });
        res.status(response.status).send(await response.text());
      } catch (error) {
        res.status(503).send(isGiveUpError(error) ? error.reason : 'error');
      }
    });
    a = await new Promise<Server>((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => resolve(server));
    });
    aUrl = `http://127.0.0.1:${(a.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    deadlinesAtB.length = 0;
    seenByC.length = 0;
    giveUps.a.length = 0;
    giveUps.b.length = 0;
  });

  afterAll(async () => {
    a.closeAllConnections();
    await new Promise<void>((resolve) => a.close(() => resolve()));
    await b.close();
    await c.close();
    await Promise.all(clients.map((sluice) => sluice.close()));
    await coordinator.close();
  });

  it('C receives at most maxAttempts (3) calls per request to A, not 3 × 3 = 9', async () => {
    const response = await fetch(`${aUrl}/a`, { headers: { 'sluice-deadline-ms': '5000' } });

    expect(response.status).toBe(503);
    expect(seenByC).toHaveLength(3);
    // B retried C (attempts 1, 2, 3), gave up, and told A so; A did not retry B.
    expect(seenByC.map((seen) => seen.attempt)).toEqual(['1', '2', '3']);
    expect(giveUps.b.map((event) => event.reason)).toEqual(['max_attempts']);
    expect(giveUps.a.map((event) => [event.reason, event.error.attempts])).toEqual([['downstream_retried', 1]]);
    expect(await response.text()).toBe('downstream_retried');
  });

  it('the deadline shrinks at every hop and reaches C through the Nest interceptor', async () => {
    await fetch(`${aUrl}/a`, { headers: { 'sluice-deadline-ms': '2000' } });
    expect(deadlinesAtB).toHaveLength(1);
    expect(deadlinesAtB[0]).toBeLessThanOrEqual(2000);
    const deadlines = seenByC.map((seen) => Number(seen.deadline));
    expect(deadlines).toHaveLength(3);
    // B worked B_WORK_MS before calling C (a timer may fire a millisecond early): C got less by that.
    expect(deadlines[0]).toBeLessThanOrEqual(deadlinesAtB[0] - (B_WORK_MS - 1));
    expect(deadlines[2]).toBeGreaterThan(0);
    // Each retry is sent later, with what is left then.
    expect(deadlines).toEqual([...deadlines].sort((x, y) => y - x));
    expect(seenByC[0].context).toMatchObject({ attempt: 1, deadlineAt: expect.any(Number) });
    expect(seenByC[2].context).toMatchObject({ attempt: 3 });
  });

  it('a service serving a retry does not retry its own calls: one call to C, and the caller is told', async () => {
    const response = await fetch(`${bUrl}/b`, { headers: { 'sluice-attempt': '2' } });

    expect(response.status).toBe(503);
    expect(response.headers.get(NO_RETRY_HEADER)).toBe('upstream_retry');
    expect(seenByC).toHaveLength(1);
    expect(giveUps.b.map((event) => event.reason)).toEqual(['upstream_retry']);
  });

  it('a request with no deadline left is not sent on', async () => {
    const response = await fetch(`${aUrl}/a`, { headers: { 'sluice-deadline-ms': '0' } });
    expect(await response.text()).toBe('deadline_exceeded');
    expect(seenByC).toHaveLength(0);
    expect(giveUps.a.map((event) => [event.reason, event.error.attempts])).toEqual([['deadline_exceeded', 0]]);
  });
});
