import request from 'supertest';
import { ADMIN_TOKEN, SHOP_TOKEN } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

// GET / is where someone who only knows the service's address lands: a browser gets a page of links
// to the console and the API description, anything else (curl) the same as JSON. No token, no redirect.
describe('GET /', () => {
  let coordinator: TestCoordinator;

  beforeAll(async () => {
    coordinator = await testCoordinator({ config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN] } });
  });
  afterAll(() => coordinator?.close());

  it.each([
    ['curl (*/*)', '*/*'],
    ['no Accept', undefined],
    ['JSON', 'application/json'],
  ])('answers %s with JSON pointing to /console/ and /docs, without a token', async (_label, accept) => {
    const call = request(coordinator.server).get('/');
    const res = await (accept === undefined ? call.unset('accept') : call.set('accept', accept)).expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers.vary).toMatch(/accept/i);
    expect(res.body).toEqual({
      service: 'sluice',
      message: expect.stringMatching(/console is at \/console\/.*described at \/docs/),
      console: '/console/',
      docs: '/docs',
      openapi: '/docs-json',
    });
  });

  it('answers a browser with a page whose links lead to the console and the API description', async () => {
    const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const res = await request(coordinator.server).get('/').set('accept', browser).expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toBe("default-src 'none'");
    const links = [...res.text.matchAll(/href="([^"]+)"/g)].map((match) => match[1]);
    expect(links).toEqual(['./console/', './docs', './docs-json']);
    for (const link of links) {
      const followed = await request(coordinator.server).get(new URL(link, 'http://sluice/').pathname).expect(200);
      expect(followed.text.length).toBeGreaterThan(0);
    }
  });
});
