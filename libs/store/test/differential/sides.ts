import type { BreakerRecord } from '@sluice/core';
import type { DependencyRef, ForcedBreakerState, Store, StoreEvent } from '../../src';
import { CHANNELS, type Op } from './operations';

const depKey = (ref: DependencyRef) => `${ref.namespace}/${ref.dependency}`;

/**
 * One store under a run, with what its own replies handed it: the latest breaker and forced state
 * of each dependency, the dead-letter cursors, its store epochs, the events it published.
 */
export class Side {
  /** Dependency → the breaker as the latest reply about it said. */
  readonly breakers = new Map<string, BreakerRecord>();
  /** Dependency → the latest forced state a trip or force-close answered (what an instance re-asserts). */
  readonly forced = new Map<string, ForcedBreakerState>();
  /** Namespace → dependencies kept listed until reset (their forced set lives without a TTL). */
  readonly listedUntilReset = new Map<string, Set<string>>();
  /** Queue → the `next` cursor of its latest page. */
  private readonly cursors = new Map<string, string | null>();
  /** A cursor → the number it is compared as: the order this side first handed it out. */
  private readonly cursorNames = new Map<string, number>();
  /** Every epoch readStoreEpochs answered. */
  readonly epochs = new Set<string>();
  /** Channel → its events, in order. */
  readonly events = new Map<string, StoreEvent[]>();
  private readonly unsubscribes: Array<() => Promise<void>> = [];

  constructor(readonly store: Store) {}

  /** Subscribes to every channel a run's operations may publish on. */
  async subscribe(): Promise<void> {
    const listen = (channel: string) => (event: StoreEvent) => {
      if (event.type === 'resync') return;
      this.events.set(channel, [...(this.events.get(channel) ?? []), event]);
    };
    for (const ref of CHANNELS.dependencies) {
      this.unsubscribes.push(await this.store.subscribeDependency(ref, listen(depKey(ref))));
    }
    for (const namespace of CHANNELS.namespaces) {
      this.unsubscribes.push(await this.store.subscribeNamespace(namespace, listen(namespace)));
    }
  }

  async unsubscribe(): Promise<void> {
    await Promise.all(this.unsubscribes.map((unsubscribe) => unsubscribe()));
  }

  /** A cursor as compared: cursors are opaque, so each side's are numbered in the order it gave them. */
  private cursorName(cursor: string | null): string | null {
    if (cursor === null) return null;
    if (!this.cursorNames.has(cursor)) this.cursorNames.set(cursor, this.cursorNames.size + 1);
    return `cursor#${this.cursorNames.get(cursor)}`;
  }

  private sawBreaker(ref: DependencyRef, record: BreakerRecord): void {
    this.breakers.set(depKey(ref), record);
    if (record.state === 'forced_open' || record.state === 'forced_closed') {
      const { state, since, openUntil, reason } = record;
      this.forced.set(depKey(ref), { state, since: since ?? 0, openUntil, reason: reason ?? '' });
    }
  }

  /** Runs one operation; answers its reply as compared (see the normalising notes on each case). */
  async run(op: Op): Promise<unknown> {
    const { store } = this;
    switch (op.op) {
      case 'pass':
        return null;
      case 'decideRetry': {
        const { ref, op: _, ...request } = op;
        const outcome = await store.decideRetry(ref, request);
        this.sawBreaker(ref, outcome.breaker.record);
        return outcome;
      }
      case 'decideRetries': {
        const outcome = await store.decideRetries(op.ref, {
          budget: op.budget,
          asks: op.asks,
          latencyWindowSeconds: op.latencyWindowSeconds,
        });
        this.sawBreaker(op.ref, outcome.breaker.record);
        return outcome;
      }
      case 'recordOutcomes': {
        const recorded = await store.recordOutcomes(op.ref, op.batch, {
          budgetWindowSeconds: op.budgetWindowSeconds,
          breaker: op.breaker,
          ...(op.budgetRule ? { budgetRule: op.budgetRule } : {}),
        });
        this.sawBreaker(op.ref, recorded.breaker.record);
        return recorded;
      }
      case 'admit': {
        const { ref, op: _, ...request } = op;
        const outcome = await store.admit(ref, request);
        this.sawBreaker(ref, outcome.breaker.record);
        return outcome;
      }
      case 'releaseLease':
        return store.releaseLease(op.ref, op.leaseId);
      case 'renewLease':
        return store.renewLease(op.ref, op.leaseId, op.leaseMs);
      case 'takeRateLimit':
        return store.takeRateLimit(op.ref, op.policy, op.cost, op.requestId);
      case 'setBreaker': {
        const snapshot = await store.setBreaker(op.ref, op.action);
        this.sawBreaker(op.ref, snapshot.record);
        return snapshot;
      }
      case 'keepForcedListed': {
        // The breaker as this side last answered it (an instance passes on what setBreaker answered).
        const breaker = this.breakers.get(depKey(op.ref));
        if (!breaker) return 'nothing to keep';
        await store.keepForcedListed(op.ref, breaker);
        const untilReset = this.listedUntilReset.get(op.ref.namespace) ?? new Set<string>();
        const forced = breaker.state === 'forced_open' || breaker.state === 'forced_closed';
        if (forced && breaker.openUntil === null) untilReset.add(op.ref.dependency);
        else untilReset.delete(op.ref.dependency);
        this.listedUntilReset.set(op.ref.namespace, untilReset);
        return breaker;
      }
      case 'reassertBreaker': {
        // The forced state this side last answered; one from long ago when it never forced one.
        const forced = this.forced.get(depKey(op.ref)) ?? {
          state: 'forced_open',
          since: 1,
          openUntil: null,
          reason: 'old',
        };
        const reasserted = await store.reassertBreaker(op.ref, forced);
        this.sawBreaker(op.ref, reasserted.snapshot.record);
        return { forced, reasserted };
      }
      case 'readDependency': {
        const { ref, op: _, ...policy } = op;
        const snapshot = await store.readDependency(ref, policy);
        this.sawBreaker(ref, snapshot.breaker.record);
        return snapshot;
      }
      case 'registerDependency':
        return store.registerDependency(op.ref, { cap: op.cap, retentionMs: op.retentionMs, by: op.by });
      case 'listDependencies':
        return store.listDependencies(op.namespace, op.retentionMs);
      case 'countDependencies':
        return store.countDependencies(op.namespace, op.retentionMs);
      case 'registerNamespace':
        return store.registerNamespace(op.namespace, { cap: op.cap, retentionMs: op.retentionMs });
      case 'listNamespaces':
        return store.listNamespaces(op.retentionMs);
      case 'writePolicy':
        return store.writePolicy(op.namespace, op.ref, op.document, op.condition);
      case 'readPolicies':
        // Listed in no order the Store promises: compared sorted.
        return (await store.readPolicies(op.namespace)).sort((a, b) =>
          `${a.kind}:${a.name}`.localeCompare(`${b.kind}:${b.name}`),
        );
      case 'appendAudit': {
        const { op: _, ...record } = op;
        return store.appendAudit(record);
      }
      case 'readAudit':
        return store.readAudit({ ...(op.namespace ? { namespace: op.namespace } : {}), limit: op.limit });
      case 'claimIdempotencyKey': {
        const { ref, op: _, ...claim } = op;
        return store.claimIdempotencyKey(ref, claim);
      }
      case 'completeIdempotencyKey':
        return store.completeIdempotencyKey(op.ref, { token: op.token, response: op.response });
      case 'releaseIdempotencyKey':
        return store.releaseIdempotencyKey(op.ref, op.token);
      case 'readIdempotencyKey':
        return store.readIdempotencyKey(op.ref);
      case 'recordDeliveryAttempt': {
        const { ref, op: _, ...attempt } = op;
        return store.recordDeliveryAttempt(ref, attempt);
      }
      case 'ackDelivery':
        return store.ackDelivery(op.ref, op.messageId);
      case 'listDeadLetters': {
        const queue = `${op.ref.namespace}/${op.ref.queue}`;
        const after = op.fromCursor ? (this.cursors.get(queue) ?? undefined) : undefined;
        const page = await store.listDeadLetters(op.ref, {
          limit: op.limit,
          retention: op.retention,
          ...(after ? { after } : {}),
        });
        this.cursors.set(queue, page.next);
        return {
          ...page,
          next: this.cursorName(page.next),
          after: after === undefined ? null : this.cursorName(after),
        };
      }
      case 'redriveDeadLetter':
        return store.redriveDeadLetter(op.ref, op.messageId);
      case 'purgeDeadLetter':
        return store.purgeDeadLetter(op.ref, op.messageId);
      case 'countDeadLetters':
        return store.countDeadLetters(op.ref, op.retention);
      case 'readHistory':
        return store.readHistory(op.ref);
      case 'noteDeadLetterQueue':
        return store.noteDeadLetterQueue(op.ref, { retentionMs: op.retentionMs, maxQueues: op.maxQueues });
      case 'listDeadLetterQueues':
        return store.listDeadLetterQueues(op.namespace, {
          retentionMs: op.retentionMs,
          limit: op.limit,
          ...(op.after ? { after: op.after } : {}),
        });
      case 'readStoreEpochs': {
        // Not compared: the embedded store has one shard whose epoch never changes (it lives and
        // dies with its process), Redis one per master, taking the candidate when it has none.
        // Each side's epochs must stay the same from call to call (checked by the run).
        for (const { epoch } of await store.readStoreEpochs(`epoch-${this.epochs.size + 1}`)) this.epochs.add(epoch);
        return 'epochs';
      }
    }
  }
}
