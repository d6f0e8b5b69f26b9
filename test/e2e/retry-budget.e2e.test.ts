import request from 'supertest';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createTestCoordinator } from '../support/coordinator';

describe('retry budget (embedded store)', () => {
  let app: NestFastifyApplication;
  beforeAll(async () => {
    app = await createTestCoordinator();
  });
  afterAll(() => app.close());

  it('grants up to the floor, then denies budget_exhausted', async () => {
    const server = app.getHttpServer();
    await request(server).post('/v1/shop/reports').send({ reporter: 'r1', deps: [{ dep: 'pay', requests: 100, successes: 100, failures: 0, slow: 0 }] }).expect(200);
    const limit = Math.floor(0.1 * 100 + 10 * 10);
    for (let i = 0; i < limit; i++) {
      const res = await request(server).post('/v1/shop/deps/pay/retry').send({ attempt: 1, idempotent: true }).expect(200);
      expect(res.body.allow).toBe(true);
    }
    const denied = await request(server).post('/v1/shop/deps/pay/retry').send({ attempt: 1, idempotent: true }).expect(200);
    expect(denied.body).toMatchObject({ allow: false, reason: 'budget_exhausted', budget: { retries: limit, requests: 100, limit } });
  });
});
