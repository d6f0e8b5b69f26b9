import { Matches } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { RESOURCE_NAME_PATTERN } from '@sluice/protocol';
import { CheckedBySchema } from '../http/validation/pipe';

const NAME_MESSAGE = `must match ${RESOURCE_NAME_PATTERN.source}`;

@CheckedBySchema()
export class NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  @JSONSchema({ description: 'The namespace: a team or service whose tokens, policies and state are its own.' })
  ns!: string;
}

@CheckedBySchema()
export class DependencyParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  @JSONSchema({ description: 'The dependency: a downstream service the namespace calls.' })
  dep!: string;
}

@CheckedBySchema()
export class LimitParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  @JSONSchema({ description: 'The named rate limit.' })
  limit!: string;
}

export class QueueParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  @JSONSchema({ description: 'The queue.' })
  queue!: string;
}
