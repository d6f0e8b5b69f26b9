import { systemClock, type Clock } from '@sluice/core';
import { ComposedStore } from '../compose';
import { SluiceKeys } from '../keys';
import type { Store } from '../store';
import { memoryAudit } from './audit';
import { memoryBreakers } from './breakers';
import { MemoryContext } from './context';
import { memoryDecisions } from './decisions';
import { memoryDeliveries } from './deliveries';
import { memoryEvents } from './events';
import { memoryHistory } from './history';
import { memoryIdempotency } from './idempotency';
import { memoryLimits } from './limits';
import { memoryPolicies } from './policies';
import { memoryRegistry } from './registry';
import { memoryResets } from './resets';
import { memoryRetryBatches } from './retry-batches';

/**
 * The Store for the embedded single-process mode: Maps and the libs/core functions, the twins of
 * the Lua scripts (the conformance suite holds both to the same semantics), one part per domain.
 * Keys and channels come from the same SluiceKeys as Redis.
 */
export class MemoryStore extends ComposedStore implements Store {
  readonly kind = 'memory';

  constructor(options: { clock?: Clock; keys?: SluiceKeys } = {}) {
    const context = new MemoryContext(options.clock ?? systemClock, options.keys ?? new SluiceKeys());
    super({
      ...memoryDecisions(context),
      ...memoryRetryBatches(context),
      ...memoryLimits(context),
      ...memoryBreakers(context),
      ...memoryHistory(context),
      ...memoryRegistry(context),
      ...memoryPolicies(context),
      ...memoryAudit(context),
      ...memoryEvents(context),
      ...memoryIdempotency(context),
      ...memoryDeliveries(context),
      ...memoryResets(context),
      ping: async () => undefined,
      waitUntilReady: async () => undefined,
      close: async () => context.channels.clear(),
    });
  }
}
