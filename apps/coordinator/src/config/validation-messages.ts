import type { ValidationError } from 'class-validator';

export interface FieldProblem {
  field: string;
  message: string;
}

/** Flattens class-validator errors into one problem per field, with dotted paths. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    if (error.constraints) {
      for (const message of Object.values(error.constraints)) problems.push({ field, message });
    }
    if (error.children?.length) problems.push(...flattenValidationErrors(error.children, field));
  }
  return problems;
}
