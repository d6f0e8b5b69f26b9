/** POST /v1/{ns}/limits/{limit}/take */

export interface TakeRequest {
  key: string;
  /** 1 by default; never more than the limit's burst. */
  cost?: number;
  /** Caller-chosen: a repeat within the limit's period answers the first answer without taking again. */
  requestId?: string;
}

export interface TakeDecision {
  allow: boolean;
  /** The burst. */
  limit: number;
  remaining: number;
  /** When a denied take would be granted, ms (0 when allowed). */
  retryAfterMs: number;
  /** Until the limit is back to a full burst, ms. */
  resetMs: number;
  shadow: boolean;
}
