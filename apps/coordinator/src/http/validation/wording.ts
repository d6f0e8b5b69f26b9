import type { ErrorObject } from 'ajv';
import type { ErrorDetail } from '@sluice/protocol';
import { clip, fieldOf, nameOf } from '../body-shape';
import { VALUE_KEYWORDS } from './compile';

/**
 * ajv's errors as the API's error details, in class-validator's wording: one field per detail,
 * named as class-validator names it (`deps.0.requests`), cut to MAX_FIELD_LENGTH.
 */

/** Where a field is: its name in an error about the whole of it. */
type Place = 'path' | 'query' | 'body';

/** At most this many details in one 400 (ajv stops at the first error; a composite adds its own). */
const MAX_DETAILS = 5;

/** Details for ajv's errors: the composite's own error rather than its branches', none for `if`. */
export function detailsOf(errors: ErrorObject[] | null | undefined, place: Place): ErrorDetail[] {
  const kept: ErrorObject[] = [];
  for (const error of errors ?? []) {
    if (error.keyword === 'if') continue;
    if (error.keyword === 'oneOf' || error.keyword === 'anyOf') {
      const at = error.instancePath;
      for (let i = kept.length - 1; i >= 0; i--) {
        const path = kept[i].instancePath;
        if (path === at || path.startsWith(`${at}/`)) kept.splice(i, 1);
      }
    }
    kept.push(error);
  }
  const details = kept.slice(0, MAX_DETAILS).map((error) => detailOf(error, place));
  return details.length > 0 ? details : [{ field: place, message: `${place} is invalid` }];
}

/** JSON pointer segments of an ajv instancePath. */
const segmentsOf = (pointer: string): string[] =>
  pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

const INDEX = /^(?:0|[1-9]\d*)$/;

function detailOf(error: ErrorObject, place: Place): ErrorDetail {
  const segments = segmentsOf(error.instancePath);
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'additionalProperties') {
    const name = String(params.additionalProperty);
    return { field: fieldOf([...segments, name]), message: `property ${clip(name)} should not exist` };
  }
  if (error.keyword === 'required') {
    const name = String(params.missingProperty);
    return { field: fieldOf([...segments, name]), message: `${clip(name)} is required` };
  }
  if (place === 'query' && error.keyword === 'type' && Array.isArray(error.data)) {
    const name = segments[segments.length - 1] ?? place;
    return { field: fieldOf(segments), message: `${clip(name)} must be given once` };
  }
  const last = segments[segments.length - 1];
  const item = last !== undefined && INDEX.test(last) && segments.length > 1 && isPlainItemError(error);
  const at = item ? segments.slice(0, -1) : segments;
  // The DTOs' own message for a pattern, which names no property: `must match ^[a-z0-9]…$`.
  if (error.keyword === 'pattern' && !item) return { field: fieldOf(at), message: verbOf(error) };
  return {
    field: fieldOf(at),
    message: `${item ? `each value in ${nameOf(at, place)}` : nameOf(at, place)} ${verbOf(error)}`,
  };
}

/** A value error on an array item that is not itself an array or object (those keep their index). */
function isPlainItemError(error: ErrorObject): boolean {
  if (!VALUE_KEYWORDS.has(error.keyword)) return false;
  if (error.keyword !== 'type') return true;
  const expected = [(error.params as { type: unknown }).type].flat();
  return !expected.includes('object') && !expected.includes('array');
}

const TYPE_NAMES: Record<string, string> = {
  integer: 'an integer number',
  number: 'a number',
  string: 'a string',
  boolean: 'a boolean value',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const typeNames = (types: unknown): string =>
  [types]
    .flat()
    .map((type) => TYPE_NAMES[String(type)] ?? String(type))
    .join(' or ');

/** class-validator's wording for the same rule (`must not be greater than 100`). */
function verbOf(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'type':
      return `must be ${typeNames(params.type)}`;
    case 'minimum':
      return `must not be less than ${params.limit}`;
    case 'maximum':
      return `must not be greater than ${params.limit}`;
    case 'exclusiveMinimum':
      return `must be greater than ${params.limit}`;
    case 'exclusiveMaximum':
      return `must be less than ${params.limit}`;
    case 'multipleOf':
      return `must be a multiple of ${params.multipleOf}`;
    case 'minLength':
      return `must be longer than or equal to ${params.limit} characters`;
    case 'maxLength':
      return `must be shorter than or equal to ${params.limit} characters`;
    case 'pattern':
      return `must match ${params.pattern}`;
    case 'enum':
      return `must be one of the following values: ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'minItems':
      return `must contain at least ${params.limit} elements`;
    case 'maxItems':
      return `must contain no more than ${params.limit} elements`;
    case 'uniqueItems':
      return 'must not contain duplicates';
    case 'minProperties':
      return `must have at least ${params.limit} properties`;
    case 'maxProperties':
      return `must have no more than ${params.limit} properties`;
    case 'oneOf':
    case 'anyOf':
      return alternativesOf(error.schema);
    case 'false schema':
    case 'not':
      return 'is not allowed here';
    default:
      return 'is invalid';
  }
}

/** `must be a string or an array`, from the branches' types. */
function alternativesOf(branches: unknown): string {
  const types = (Array.isArray(branches) ? branches : []).map((branch) => (branch as { type?: unknown }).type);
  if (types.length === 0 || types.some((type) => type === undefined)) return 'must match one of the allowed forms';
  return `must be ${typeNames(types.flat())}`;
}
