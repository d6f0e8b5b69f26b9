/** The error body every 4xx/5xx carries (docs/api.md, Conventions). */

export const ERROR_CODES = [
  'validation_failed',
  'unauthorized',
  'forbidden',
  'not_found',
  'payload_too_large',
  'fingerprint_mismatch',
  'in_flight',
  'lease_lost',
  'precondition_failed',
  'too_many_dependencies',
  'too_many_namespaces',
  'store_unavailable',
  'overloaded',
  'internal_error',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  field: string;
  message: string;
}

export interface ErrorBody {
  statusCode: number;
  code: ErrorCode;
  message: string;
  details?: ErrorDetail[];
}
