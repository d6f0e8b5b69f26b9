// The base of every error the SDK raises, and how its type guards recognise one.

/**
 * The base of every error the SDK raises itself.
 * @example
 * try { await payments.execute(call); } catch (error) { if (isSluiceError(error)) log.warn(error.message); }
 */
export class SluiceError extends Error {
  /** Marker for {@link isSluiceError}: survives duplicated copies of the package, unlike `instanceof`. */
  readonly isSluiceError = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A type guard on a marker property: survives duplicated copies of the package, unlike `instanceof`. */
export const marker =
  <T>(property: string) =>
  (error: unknown): error is T =>
    typeof error === 'object' && error !== null && (error as Record<string, unknown>)[property] === true;

/**
 * True for any error the SDK raised itself.
 * @example
 * if (isSluiceError(error)) log.warn(error.message);
 */
export const isSluiceError = marker<SluiceError>('isSluiceError');
