import { ManualClock } from '@sluice/core';
import { MemoryStore } from '../src';
import { describeEdgeConformance } from './edge-conformance';

describeEdgeConformance('MemoryStore', async () => {
  const clock = new ManualClock();
  return {
    store: new MemoryStore({ clock }),
    pass: async (ms) => clock.advance(ms),
    stepBack: async (ms) => clock.advance(-ms),
    cleanup: async () => {},
  };
});
