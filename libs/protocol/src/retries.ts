/** POST /v1/{ns}/retries */
import type { RetryDecision, RetryRequest } from './retry';

/** One retry ask of a batch: the fields of `POST …/deps/{dep}/retry`, plus the dependency. */
export interface RetryAsk extends RetryRequest {
  dep: string;
}

/** 1 to MAX_RETRY_ASKS asks, decided exactly as if sent one by one in this order. */
export interface RetryBatchRequest {
  asks: RetryAsk[];
}

/** One decision per ask, in the asks' order: what `POST …/deps/{dep}/retry` would have answered. */
export interface RetryBatchDecision {
  decisions: RetryDecision[];
}
