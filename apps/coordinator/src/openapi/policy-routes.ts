import { AdminRoute } from '../http/routes';
import { ERRORS, ETAG, notFound, tooManyDependencies, type ErrorDoc, type RouteDoc } from './route-docs';

/** One kind of policy document: the namespace default, a dependency's, a named limit's, a queue's. */
export interface PolicyKindDoc {
  /** Operation ids are read…, put…, delete… + this. */
  name: string;
  /** "a named limit". */
  what: string;
  /** The document's schema (request and response: the document as stored). */
  schema: 'DependencyPolicyDto' | 'NamedLimitPolicyDto' | 'QueuePolicyDto';
  description: string;
  /** Rules across fields, checked on the document as it will apply. */
  rules?: string;
  /** Storing it may register a new dependency (too_many_dependencies). */
  newDependency?: boolean;
}

const IF_MATCH = {
  name: 'If-Match',
  description:
    '`*` (the document must exist) or the `ETag` of the version the change is based on (a list: any of them); ' +
    'weak tags never match. Otherwise 412 and nothing changes.',
};

const IF_NONE_MATCH = {
  name: 'If-None-Match',
  description: '`*`: create only; 412 if the document exists. Not together with `If-Match`.',
};

const PRECONDITION_FAILED: ErrorDoc = {
  status: 412,
  code: 'precondition_failed',
  description:
    '`If-Match` or `If-None-Match` does not hold: the document changed, or exists, or does not exist. `details` ' +
    'names the header; `ETag` is the current version, when there is one.',
  headers: { ETag: { description: 'The current version, when there is a document.', schema: { type: 'string' } } },
};

const BAD_PRECONDITION: ErrorDoc = {
  ...ERRORS.validationFailed,
  description: 'A malformed `If-Match` / `If-None-Match` (`details` names it), or both sent.',
};

const NO_DOCUMENT = notFound('The namespace has no such document.');

/**
 * GET, PUT and DELETE of one kind of policy document, documented alike: `ETag` versions,
 * `If-Match` / `If-None-Match: *` on writes, `?reason=` for the audit log.
 */
export function policyRoutes(kind: PolicyKindDoc): Record<'read' | 'put' | 'remove', MethodDecorator> {
  const document = { schema: kind.schema, headers: ETAG };
  const put: RouteDoc = {
    operationId: `put${kind.name}`,
    summary: `Store ${kind.what}`,
    description:
      `${kind.description}\n\nThe document is validated field by field (an invalid one is a 400 naming each ` +
      'field, and nothing is stored), stored with a new version, applied by every instance at once, and ' +
      'audited with `?reason=`.' +
      (kind.rules ? ` Rules across fields are checked on the document as it will apply: ${kind.rules}.` : ''),
    headers: [IF_MATCH, IF_NONE_MATCH],
    responses: [{ status: 200, description: 'The stored document; `ETag` is its new version.', ...document }],
    errors: [
      BAD_PRECONDITION,
      PRECONDITION_FAILED,
      ...(kind.newDependency ? [tooManyDependencies()] : []),
      ERRORS.tooManyNamespaces,
    ],
  };
  return {
    read: AdminRoute({
      operationId: `read${kind.name}`,
      summary: `Read ${kind.what}`,
      description: kind.description,
      responses: [{ status: 200, description: 'The document as stored; `ETag` is its version.', ...document }],
      errors: [NO_DOCUMENT],
    }),
    put: AdminRoute(put),
    remove: AdminRoute({
      operationId: `delete${kind.name}`,
      summary: `Delete ${kind.what}`,
      description: 'Back to what applies without the document. Audited with `?reason=`.',
      headers: [IF_MATCH],
      responses: [{ status: 204, description: 'Deleted.' }],
      errors: [BAD_PRECONDITION, NO_DOCUMENT, PRECONDITION_FAILED],
    }),
  };
}
