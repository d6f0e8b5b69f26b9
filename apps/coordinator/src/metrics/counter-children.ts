import type { Counter } from 'prom-client';
import { LabelIndex, labelsOf } from './label-index';

/** One label set's counter: increments add to a plain number until the next scrape. */
export interface CounterChild {
  inc(value?: number): void;
}

interface Child<L extends string> extends CounterChild {
  readonly labels: Record<L, string>;
  pending: number;
}

/**
 * A counter's children, each resolved once per label set. An increment on the hot path adds to a
 * number (prom-client hashes and validates the labels of every `inc`, its own `labels()` children
 * included); a scrape (the counter's `collect`) hands each child's sum to prom-client.
 *
 * @example
 * const decisions = new CounterChildren(counter); // counter: new Counter({ …, collect: () => decisions.flush() })
 * decisions.child('shop', 'payments-api', 'granted').inc();
 */
export class CounterChildren<L extends string> {
  private readonly children: LabelIndex<Child<L>>;

  constructor(
    private readonly counter: Counter<L>,
    labelNames: readonly L[],
  ) {
    this.children = new LabelIndex((values) => {
      const created: Child<L> = {
        labels: labelsOf(labelNames, values),
        pending: 0,
        inc(value = 1) {
          created.pending += value;
        },
      };
      return created;
    });
  }

  /** The child of these label values (in the counter's label order); finding it builds no key. */
  child(...values: string[]): CounterChild {
    return this.children.get(values);
  }

  /** Hands the increments since the last flush to prom-client (the counter's `collect`). */
  flush(): void {
    for (const child of this.children.children()) {
      if (child.pending === 0) continue;
      this.counter.inc(child.labels, child.pending);
      child.pending = 0;
    }
  }

  /** Drops the children whose labels match, with what they had not flushed (their series go too). */
  forget(matches: (labels: Record<L, string>) => boolean): void {
    this.children.deleteWhere((child) => matches(child.labels));
  }
}
