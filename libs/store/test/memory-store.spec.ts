import { ManualClock } from '@sluice/core';
import { MemoryStore } from '../src';
import { describeAdaptiveBudgetConformance } from './adaptive-budget-conformance';
import { describeBreakerConformance } from './breaker-conformance';
import { describeLimitsConformance } from './limits-conformance';
import { describeHistoryConformance } from './history-conformance';
import { describeMergedReportsConformance } from './merged-reports-conformance';
import { describeRetryBatchConformance } from './retry-batch-conformance';
import { describeStoreConformance, type StoreUnderTest } from './store-conformance';

const memoryStore = async (): Promise<StoreUnderTest> => {
  const clock = new ManualClock();
  return {
    store: new MemoryStore({ clock }),
    pass: async (ms) => clock.advance(ms),
    now: () => clock.now(),
    cleanup: async () => {},
  };
};

describeStoreConformance('MemoryStore', memoryStore);
describeBreakerConformance('MemoryStore', memoryStore);
describeLimitsConformance('MemoryStore', memoryStore);
describeRetryBatchConformance('MemoryStore', memoryStore);
describeMergedReportsConformance('MemoryStore', memoryStore);
describeAdaptiveBudgetConformance('MemoryStore', memoryStore);
describeHistoryConformance('MemoryStore', memoryStore);
