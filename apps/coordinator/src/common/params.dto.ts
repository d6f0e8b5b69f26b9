import { Matches } from 'class-validator';
import { RESOURCE_NAME_PATTERN } from '@sluice/protocol';

const NAME_MESSAGE = `must match ${RESOURCE_NAME_PATTERN.source}`;

export class NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  ns!: string;
}

export class DependencyParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  dep!: string;
}

export class LimitParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  limit!: string;
}

export class QueueParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  queue!: string;
}
