import type { ValidationError } from 'class-validator';

export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * Checks of what a value is, said before checks of its range: `"10%"` for a ratio is "must be a
 * number", not "must not be greater than 1".
 */
const TYPE_CHECKS = new Set(['isNumber', 'isInt', 'isBoolean', 'isString', 'isObject', 'isArray', 'isIn', 'isEnum']);

/** class-validator's default ending of a number check, which says nothing more. */
const VAGUE = / conforming to the specified constraints$/;

/** Flattens class-validator errors into one problem per field and check, with dotted paths, type checks first. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    if (error.constraints) {
      const checks = Object.entries(error.constraints);
      const ordered = [
        ...checks.filter(([name]) => TYPE_CHECKS.has(name)),
        ...checks.filter(([name]) => !TYPE_CHECKS.has(name)),
      ];
      for (const [, message] of ordered) problems.push({ field, message: message.replace(VAGUE, '') });
    }
    if (error.children?.length) problems.push(...flattenValidationErrors(error.children, field));
  }
  return problems;
}
