import 'reflect-metadata';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, Matches, ValidateNested } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { MAX_RETRY_ASKS, RESOURCE_NAME_PATTERN, type RetryAsk, type RetryBatchRequest } from '@sluice/protocol';
import { RetryRequestDto } from './retry.dto';
import { CheckedBySchema } from '../http/validation/pipe';

export class RetryAskDto extends RetryRequestDto implements RetryAsk {
  @Matches(RESOURCE_NAME_PATTERN, { message: `must match ${RESOURCE_NAME_PATTERN.source}` })
  @JSONSchema({ description: 'The dependency whose failed call this ask is about.' })
  dep!: string;
}

@CheckedBySchema()
export class RetryBatchRequestDto implements RetryBatchRequest {
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_RETRY_ASKS)
  @ValidateNested({ each: true })
  @Type(() => RetryAskDto)
  @JSONSchema({
    description: `1 to ${MAX_RETRY_ASKS} asks, each with the fields of POST …/deps/{dep}/retry plus \`dep\`, decided in this order.`,
  })
  asks!: RetryAskDto[];
}
