import type { Store } from '@sluice/store';
import type { MetricsService } from '../metrics/metrics.service';

type StoreOperation = Exclude<keyof Store, 'kind' | 'close' | 'waitUntilReady'>;
/** Every operation, as a record so that the compiler refuses a Store operation left out. */
const TIMED: Record<StoreOperation, true> = {
  decideRetry: true,
  recordOutcomes: true,
  readDependency: true,
  registerDependency: true,
  claimIdempotencyKey: true,
  completeIdempotencyKey: true,
  releaseIdempotencyKey: true,
  readIdempotencyKey: true,
  recordDeliveryAttempt: true,
  ackDelivery: true,
  listDeadLetters: true,
  redriveDeadLetter: true,
  purgeDeadLetter: true,
  countDeadLetters: true,
  ping: true,
};
const OPERATIONS = Object.keys(TIMED) as StoreOperation[];

/** Wraps a Store so every operation is timed and every failure counted. */
export function instrumentStore(store: Store, metrics: MetricsService): Store {
  const instrumented: Store = Object.create(store) as Store;
  for (const operation of OPERATIONS) {
    const original = store[operation].bind(store) as (...args: unknown[]) => Promise<unknown>;
    (instrumented as unknown as Record<string, unknown>)[operation] = async (...args: unknown[]) => {
      const stopTimer = metrics.storeOperationDuration.startTimer({ operation });
      try {
        return await original(...args);
      } catch (error) {
        metrics.storeErrors.inc({ operation });
        throw error;
      } finally {
        stopTimer();
      }
    };
  }
  return instrumented;
}
