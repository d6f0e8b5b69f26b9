import type { Store } from '@sluice/store';
import type { MetricsService } from '../metrics/metrics.service';

type StoreOperation = Exclude<
  keyof Store,
  'kind' | 'close' | 'waitUntilReady' | 'subscribeDependency' | 'subscribeNamespace'
>;
/** Every one-shot operation (the type makes the list complete); subscriptions are long-lived and not timed. */
const OPERATIONS: Record<StoreOperation, true> = {
  decideRetry: true,
  decideRetries: true,
  recordOutcomes: true,
  admit: true,
  takeRateLimit: true,
  releaseLease: true,
  renewLease: true,
  setBreaker: true,
  readDependency: true,
  readHistory: true,
  registerDependency: true,
  listDependencies: true,
  countDependencies: true,
  registerNamespace: true,
  listNamespaces: true,
  readPolicies: true,
  writePolicy: true,
  appendAudit: true,
  readAudit: true,
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
  noteDeadLetterQueue: true,
  listDeadLetterQueues: true,
  readStoreEpochs: true,
  reassertBreaker: true,
  keepForcedListed: true,
  ping: true,
};

/** Wraps a Store so every operation is timed and every failure counted. */
export function instrumentStore(store: Store, metrics: MetricsService): Store {
  const instrumented: Store = Object.create(store) as Store;
  for (const operation of Object.keys(OPERATIONS) as StoreOperation[]) {
    const original = store[operation].bind(store) as (...args: unknown[]) => Promise<unknown>;
    // Labels and histogram child per operation, made once: the decision path calls these thousands of times a second.
    const labels = { operation };
    const duration = metrics.storeOperationDuration.child(operation);
    (instrumented as unknown as Record<string, unknown>)[operation] = async (...args: unknown[]) => {
      const started = performance.now();
      try {
        return await original(...args);
      } catch (error) {
        metrics.storeErrors.inc(labels);
        throw error;
      } finally {
        duration.observe((performance.now() - started) / 1000);
      }
    };
  }
  return instrumented;
}
