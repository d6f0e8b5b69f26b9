import type { SluiceRequestContext } from '../context/request-context';

/** The state of one `execute` call. */
export interface Call {
  /** When the call's deadline passes, on the client's clock. */
  deadlineAt: number;
  idempotent: boolean;
  key: string | undefined;
  signal: AbortSignal | undefined;
  /** The request this process is serving, if any. */
  request: SluiceRequestContext | undefined;
  /** Attempts sent so far, hedges included. */
  launched: number;
  /**
   * The next attempt goes out on a retry the budget granted (set by the retry step or a hedge's
   * grant, taken by the next launch): its success is reported, so an adaptive budget gives it back.
   */
  retryGranted: boolean;
  /** What each attempt costs against a rate limit. */
  cost: number;
  /** The last attempt's error, once one failed. */
  lastError: unknown;
}
