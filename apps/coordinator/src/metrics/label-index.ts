/** A label value as the hot path has it (a status code may stay a number). */
export type LabelValue = string | number;

/** A child's labels, as prom-client takes them: each name with its value as a string. */
export function labelsOf<L extends string>(names: readonly L[], values: readonly LabelValue[]): Record<L, string> {
  return Object.fromEntries(names.map((name, i) => [name, String(values[i])])) as Record<L, string>;
}

/**
 * A metric's children by label values: one map per label, keyed by the values as given, so finding
 * a child builds no key (a joined string key is a new string to hash on every call). Each child is
 * made once, by `create`.
 *
 * @example
 * const index = new LabelIndex((values) => newChild(values));
 * const child = index.get(['shop', 'payments-api', 'granted']);
 */
export class LabelIndex<C> {
  private root = new Map<LabelValue, unknown>();
  private readonly all: C[] = [];

  constructor(private readonly create: (values: readonly LabelValue[]) => C) {}

  /** The child of `values` (always as many as the metric has labels), made the first time. */
  get(values: readonly LabelValue[]): C {
    let level = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]) as Map<LabelValue, unknown> | undefined;
      if (!next) {
        next = new Map();
        level.set(values[i], next);
      }
      level = next;
    }
    let child = level.get(values[last]) as C | undefined;
    if (child === undefined) {
      child = this.create(values);
      level.set(values[last], child);
      this.all.push(child);
    }
    return child;
  }

  /** Every child, in the order they were made. */
  children(): readonly C[] {
    return this.all;
  }

  /** Drops the children `drop` answers true for. */
  deleteWhere(drop: (child: C) => boolean): void {
    const kept = this.all.filter((child) => !drop(child));
    if (kept.length === this.all.length) return;
    const keep = new Set(kept);
    const prune = (level: Map<LabelValue, unknown>): void => {
      for (const [value, entry] of level) {
        if (entry instanceof Map) {
          prune(entry as Map<LabelValue, unknown>);
          if (entry.size === 0) level.delete(value);
        } else if (!keep.has(entry as C)) level.delete(value);
      }
    };
    prune(this.root);
    this.all.splice(0, this.all.length, ...kept);
  }

  /** Drops every child. */
  clear(): void {
    this.root = new Map();
    this.all.length = 0;
  }
}
