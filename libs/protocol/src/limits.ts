/** POST /v1/{ns}/limits/{limit}/take */

export interface TakeRequest {
  key: string;
  cost?: number;
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
