import request from 'supertest';
import type { TokenDefinition } from '../../apps/coordinator/src/config/tokens';
import { ADMIN_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/** An operator of the shop namespace only. */
const SHOP_ADMIN: TokenDefinition = {
  id: 'shop-ops',
  secret: 'shop-admin-secret-0123',
  role: 'admin',
  namespaces: ['shop'],
};

describe('the audit log is scoped to the namespaces a token covers', () => {
  let coordinator: TestCoordinator;
  beforeAll(async () => {
    coordinator = await testCoordinator({ config: { tokens: [ADMIN_TOKEN, SHOP_ADMIN] } });
    const { server } = coordinator;
    for (const ns of ['shop', 'billing']) {
      await request(server)
        .post(`/admin/v1/${ns}/breakers/pay/trip`)
        .set(bearer(ADMIN_TOKEN))
        .send({ reason: `drill in ${ns}` })
        .expect(200);
    }
  });
  afterAll(() => coordinator?.close());

  it('lets a namespace admin read its own namespace, and nothing wider', async () => {
    const { server } = coordinator;
    const own = await request(server).get('/admin/v1/audit?ns=shop').set(bearer(SHOP_ADMIN)).expect(200);
    expect(own.body.items.map((entry: { namespace: string }) => entry.namespace)).toEqual(['shop']);
    const other = await request(server).get('/admin/v1/audit?ns=billing').set(bearer(SHOP_ADMIN)).expect(403);
    expect(other.body.code).toBe('forbidden');
    const everything = await request(server).get('/admin/v1/audit').set(bearer(SHOP_ADMIN)).expect(403);
    expect(everything.body.code).toBe('forbidden');
  });

  it('lets an admin of every namespace read the whole log', async () => {
    const all = await request(coordinator.server).get('/admin/v1/audit').set(bearer(ADMIN_TOKEN)).expect(200);
    expect(all.body.items.map((entry: { namespace: string }) => entry.namespace)).toEqual(['shop', 'billing']);
  });
});
