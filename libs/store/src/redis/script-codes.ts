/**
 * The codes the Lua scripts answer with, in one table (bullmq's `ErrorCode` and `finishedErrors`):
 * one enum, generated into the scripts as the Lua table `CODE` (includes/codes.lua, written in by
 * loadScript), and one function from a code to its outcome, or to an error for a code the script
 * may not answer.
 */
export enum ScriptCode {
  // Decisions: decide_retry, admit, take_rate_limit.
  Granted = 1,
  BudgetExhausted = 2,
  DeadlineExceeded = 3,
  BreakerOpen = 4,
  RateLimited = 5,
  ConcurrencyLimited = 6,
  // Idempotency claims: claim_idempotency_key (and complete_idempotency_key's Completed).
  Claimed = 11,
  Recovered = 12,
  Completed = 13,
  InFlight = 14,
  Mismatch = 15,
  Resumed = 16,
  // Fenced writes: complete_idempotency_key, release_idempotency_key.
  Released = 21,
  Absent = 22,
  LeaseLost = 23,
  // Conditional writes: write_policy.
  Written = 31,
  PreconditionFailed = 32,
  NotFound = 33,
}

/** Each code's outcome: the name the Store reports, and the key of `CODE` in Lua. */
export const SCRIPT_OUTCOMES = {
  [ScriptCode.Granted]: 'granted',
  [ScriptCode.BudgetExhausted]: 'budget_exhausted',
  [ScriptCode.DeadlineExceeded]: 'deadline_exceeded',
  [ScriptCode.BreakerOpen]: 'breaker_open',
  [ScriptCode.RateLimited]: 'rate_limited',
  [ScriptCode.ConcurrencyLimited]: 'concurrency_limited',
  [ScriptCode.Claimed]: 'claimed',
  [ScriptCode.Recovered]: 'recovered',
  [ScriptCode.Completed]: 'completed',
  [ScriptCode.InFlight]: 'in_flight',
  [ScriptCode.Mismatch]: 'mismatch',
  [ScriptCode.Resumed]: 'resumed',
  [ScriptCode.Released]: 'released',
  [ScriptCode.Absent]: 'absent',
  [ScriptCode.LeaseLost]: 'lease_lost',
  [ScriptCode.Written]: 'written',
  [ScriptCode.PreconditionFailed]: 'precondition_failed',
  [ScriptCode.NotFound]: 'not_found',
} as const satisfies Record<ScriptCode, string>;

export type ScriptOutcome = (typeof SCRIPT_OUTCOMES)[ScriptCode];

/** A script answered a code it may not answer: the scripts and this table disagree (a bug, not an outage). */
export class ScriptReplyError extends Error {
  constructor(
    readonly script: string,
    readonly code: unknown,
  ) {
    super(`script ${script} answered code ${String(code)}, which it may not answer`);
    this.name = 'ScriptReplyError';
  }
}

/** The outcome of `code`, one of those `script` may answer; ScriptReplyError for any other code. */
export function scriptOutcome<const O extends ScriptOutcome>(script: string, code: unknown, expected: readonly O[]): O {
  const outcome = isScriptCode(code) ? SCRIPT_OUTCOMES[code] : undefined;
  const known = expected.find((candidate) => candidate === outcome);
  if (known === undefined) throw new ScriptReplyError(script, code);
  return known;
}

function isScriptCode(code: unknown): code is ScriptCode {
  return typeof code === 'number' && Object.hasOwn(SCRIPT_OUTCOMES, code);
}

/** The body of the Lua table `CODE`: `granted = 1, budget_exhausted = 2, …`. */
export function luaCodeTable(): string {
  return Object.entries(SCRIPT_OUTCOMES)
    .map(([code, outcome]) => `${outcome} = ${code}`)
    .join(', ');
}
