import { ManualClock } from '@sluice/core';
import { MemoryStore } from '../src';
import { describeStoreConformance } from './store-conformance';

describeStoreConformance('MemoryStore', async () => {
  const clock = new ManualClock();
  return {
    store: new MemoryStore({ clock }),
    pass: async (ms) => clock.advance(ms),
    cleanup: async () => {},
  };
});
