import { applyDecorators } from '@nestjs/common';
import { IsOptional, IsString, Matches } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { REQUEST_ID_PATTERN } from '@sluice/protocol';

/**
 * An optional caller-chosen id of a state-changing call (`requestId`, `claimId`): a string of the
 * id pattern, documented with what a repeat under it answers.
 * @example
 * @CallerChosenId('Asking again with it answers the first grant.') requestId?: string;
 */
export const CallerChosenId = (description: string): PropertyDecorator =>
  applyDecorators(
    IsOptional(),
    IsString(),
    Matches(REQUEST_ID_PATTERN, { message: `must match ${REQUEST_ID_PATTERN.source}` }),
    JSONSchema({ description }),
  );
