import { Logger } from '@nestjs/common';
import type { Store, StoreEvent, Unsubscribe } from '@sluice/store';

/** A namespace's event subscription: started on first use, live once the store confirmed it. */
interface Watch {
  unsubscribe?: Unsubscribe;
}

/**
 * Follows namespaces' events: a `policy` event (or a `resync` after a lost subscription, when a
 * change may have been missed) calls `onChange`. Until a subscription is confirmed a change may be
 * missed, so `onChange` is called once more when it is; a subscription that fails is tried again
 * on the next `watch` (staleness stays bounded by the cache's TTL meanwhile).
 */
export class PolicyWatcher {
  private readonly logger = new Logger('Policies');
  private readonly watches = new Map<string, Watch>();
  private warnedSubscribe = false;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly onChange: (namespace: string) => void,
    private readonly limits: {
      /** Most namespaces followed at once; the one watched first goes first. */
      maxWatched: number;
      /** Named in the warning: how soon a change made elsewhere applies here anyway. */
      staleMs: number;
      /** Called for a namespace no longer followed to stay within maxWatched. */
      onEvict: (namespace: string) => void;
    },
  ) {}

  /** How many namespaces are followed. */
  get size(): number {
    return this.watches.size;
  }

  watch(namespace: string): void {
    if (this.stopped || this.watches.has(namespace)) return;
    const watch: Watch = {};
    this.watches.set(namespace, watch);
    const onEvent = (event: StoreEvent) => {
      if (event.type === 'policy' || event.type === 'resync') this.onChange(namespace);
    };
    Promise.resolve()
      .then(() => this.store.subscribeNamespace(namespace, onEvent))
      .then(
        (unsubscribe) => {
          if (this.watches.get(namespace) !== watch) {
            void unsubscribe().catch(() => undefined);
            return;
          }
          watch.unsubscribe = unsubscribe;
          this.onChange(namespace);
        },
        (error: unknown) => {
          if (this.watches.get(namespace) === watch) this.watches.delete(namespace);
          const message =
            `cannot follow policy changes of namespace "${namespace}" (${(error as Error).message}): ` +
            `changes made through other instances apply here within ${this.limits.staleMs} ms`;
          if (this.warnedSubscribe) this.logger.debug(message);
          else this.logger.warn(message);
          this.warnedSubscribe = true;
        },
      );
    while (this.watches.size > this.limits.maxWatched) {
      const oldest = this.watches.keys().next().value as string;
      this.forget(oldest);
      this.limits.onEvict(oldest);
    }
  }

  /** Stops following `namespace`. */
  forget(namespace: string): void {
    const watch = this.watches.get(namespace);
    this.watches.delete(namespace);
    void watch?.unsubscribe?.().catch(() => undefined);
  }

  /** Stops following every namespace, and refuses new ones. */
  async stop(): Promise<void> {
    this.stopped = true;
    const watches = [...this.watches.values()];
    this.watches.clear();
    await Promise.all(watches.map((watch) => watch.unsubscribe?.().catch(() => undefined)));
  }
}
