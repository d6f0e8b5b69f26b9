import { runInThisContext } from 'node:vm';
import { testCoordinator } from '../support/test-coordinator';

// Jest hands test code a copy of `process`; warnings are emitted on the real one.
const realProcess = runInThisContext('process') as NodeJS.Process;

// A coordinator boots without a warning from Node, Fastify or Nest (a deprecated option, say):
// each such warning is printed by every process and every test that starts one.
describe('booting a coordinator', () => {
  const warnings: Error[] = [];
  const collect = (warning: Error) => warnings.push(warning);
  beforeAll(() => realProcess.on('warning', collect));
  afterAll(() => realProcess.off('warning', collect));

  it('emits no process warning', async () => {
    const coordinator = await testCoordinator({ listen: true });
    await coordinator.close();
    // A warning is emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.map((warning) => `${warning.name}: ${warning.message}`)).toEqual([]);
  });
});
