import request from 'supertest';
import type { Store } from '@sluice/store';
import { STORE } from '../../apps/coordinator/src/store/store.provider';
import { ADMIN_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('an operator\u2019s trip outlives the registry of dependencies (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let store: Store;
  beforeAll(async () => {
    coordinator = await testCoordinator({ redis: useRedis });
    store = coordinator.app.get<Store>(STORE);
  });
  afterAll(() => coordinator?.close());

  const act = (dep: string, action: 'trip' | 'reset', body: object) =>
    request(coordinator.server).post(`/admin/v1/shop/breakers/${dep}/${action}`).set(bearer(ADMIN_TOKEN)).send(body);
  /** What the store lists once a registry retention of 1 ms has passed: only what a forced state keeps. */
  const listedPastRetention = async () => {
    await coordinator.waitPast(Date.now() + 5);
    return store.listDependencies('shop', 1);
  };

  it('keeps a tripped dependency listed until it is reset, however long nobody uses it', async () => {
    await act('payments-api', 'trip', { reason: 'bad deploy' }).expect(200);
    expect(await listedPastRetention()).toEqual(['payments-api']);
    const breakers = await request(coordinator.server)
      .get('/admin/v1/shop/breakers')
      .set(bearer(ADMIN_TOKEN))
      .expect(200);
    expect(breakers.body.items).toEqual([
      expect.objectContaining({ dependency: 'payments-api', state: 'forced_open' }),
    ]);
    await act('payments-api', 'reset', { reason: 'fixed' }).expect(200);
    expect(await listedPastRetention()).toEqual([]);
  });
});
