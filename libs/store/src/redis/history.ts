import type { HistoryStep } from '@sluice/core';
import type { BreakerState } from '@sluice/protocol';
import type { SluiceKeys } from '../keys';
import type { HistoryStore } from '../roles/history';
import type { ScriptRunner } from './script-runner';

/** A step as history.lua stores it. */
type StoredStep = [
  start: number,
  successes: number,
  failures: number,
  slow: number,
  retries: number,
  retriesSucceeded: number,
  requests: number,
  limit: number,
  cap: number,
  windowSeconds: number,
  state: BreakerState,
];

function stepOf(value: string): HistoryStep {
  const [start, successes, failures, slow, retries, retriesSucceeded, requests, limit, cap, windowSeconds, state] =
    JSON.parse(value) as StoredStep;
  return {
    at: start * 1000,
    successes,
    failures,
    slow,
    budget: { retries, retriesSucceeded, requests, limit, cap, windowSeconds },
    state,
  };
}

/** A dependency's history: read_history-1.lua (record_outcomes-8.lua writes it). */
export function redisHistory(scripts: ScriptRunner, keys: SluiceKeys): HistoryStore {
  return {
    async readHistory(ref) {
      const reply = await scripts.run('read_history', keys.dependency(ref.namespace, ref.dependency).history);
      return reply.map(stepOf).sort((a, b) => a.at - b.at);
    },
  };
}
