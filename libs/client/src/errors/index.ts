// The errors the SDK raises, one file per family, and their type guards.

export { SluiceError, isSluiceError } from './sluice-error';
export { GiveUpError, isGiveUpError, type GiveUpReason, type LimitReason } from './give-up-error';
export { BreakerOpenError, isBreakerOpenError, type BreakerFacts } from './breaker-open-error';
export { LimitedError, isLimitedError } from './limited-error';
export {
  DeadlineExceededError,
  AttemptTimeoutError,
  isDeadlineExceededError,
  isAttemptTimeoutError,
} from './timeout-errors';
export { HttpStatusError, isHttpStatusError } from './http-status-error';
export {
  CoordinatorUnavailableError,
  ConfigError,
  SluiceHttpError,
  LeaseLostError,
  isCoordinatorUnavailableError,
  isConfigError,
  isSluiceHttpError,
  isLeaseLostError,
} from './coordinator-errors';
