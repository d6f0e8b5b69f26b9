import { HttpException } from '@nestjs/common';
import type { ErrorBody, ErrorCode, ErrorDetail } from '@sluice/protocol';

/** An HTTP error with the API's error body; `extra` fields are merged into the body. */
export class ApiError extends HttpException {
  constructor(
    status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers: Record<string, string> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message, status);
  }

  body(): ErrorBody & Record<string, unknown> {
    return {
      statusCode: this.getStatus(),
      code: this.code,
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
      ...this.extra,
    };
  }
}

export const validationFailed = (details: ErrorDetail[]): ApiError =>
  new ApiError(400, 'validation_failed', details.map((d) => `${d.field}: ${d.message}`).join('; '), details);

export const tooManyDependencies = (field: string, cap: number): ApiError =>
  new ApiError(422, 'too_many_dependencies', `the namespace already has ${cap} dependencies`, [
    { field, message: `the namespace is at its cap of ${cap} distinct dependencies` },
  ]);

export const storeUnavailable = (retryAfterSeconds = 1): ApiError =>
  new ApiError(503, 'store_unavailable', 'the state store did not answer in time', undefined, {
    'retry-after': String(retryAfterSeconds),
  });

export const overloaded = (reason: string, retryAfterSeconds = 1): ApiError =>
  new ApiError(503, 'overloaded', `this instance is past its capacity (${reason}): nothing was done`, undefined, {
    'retry-after': String(retryAfterSeconds),
  });

export const payloadTooLarge = (field: string, limitBytes: number): ApiError => {
  const message = `must be at most ${limitBytes} bytes`;
  return new ApiError(413, 'payload_too_large', `${field}: ${message}`, [{ field, message }]);
};

export const notFound = (message: string): ApiError => new ApiError(404, 'not_found', message);

/** A `Retry-After` value: whole seconds, rounded up, at least 1 (docs/api.md, Conventions). */
export const retryAfterSeconds = (ms: number): string => String(Math.max(1, Math.ceil(ms / 1000)));
