/** The store could not be reached or did not answer in time: an infrastructure failure. */
export class StoreUnavailableError extends Error {
  readonly storeUnavailable = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

export function isStoreUnavailableError(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError;
}
