import { epochSecond, readHistory } from '@sluice/core';
import type { HistoryStore } from '../roles/history';
import type { MemoryContext } from './context';

/** A dependency's history in memory: the ring its recordOutcomes writes (libs/core dependency-history.ts). */
export function memoryHistory(context: MemoryContext): HistoryStore {
  return {
    async readHistory(ref) {
      return readHistory(context.existing(ref)?.history, epochSecond(context.now()));
    },
  };
}
