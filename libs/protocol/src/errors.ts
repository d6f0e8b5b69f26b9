/** The error body every 4xx/5xx carries (API.md §Conventions). */

export type ErrorCode =
  | 'validation_failed'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'payload_too_large'
  | 'fingerprint_mismatch'
  | 'in_flight'
  | 'lease_lost'
  | 'precondition_failed'
  | 'too_many_dependencies'
  | 'store_unavailable'
  | 'overloaded'
  | 'too_many_namespaces'
  | 'internal_error';

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
