import type { Metric, MetricValueWithName, Registry } from 'prom-client';
import { LabelIndex, labelsOf, type LabelValue } from './label-index';

/** One label set's histogram: an observation adds to plain numbers until a scrape reads them. */
export interface HistogramChild {
  observe(value: number): void;
}

interface Child<L extends string> extends HistogramChild {
  readonly labels: Partial<Record<L | 'le', string>>;
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/** What a scrape reads of a {@link HistogramChildren}. */
export interface HistogramSeries<L extends string> {
  name: string;
  help: string;
  type: 'histogram';
  aggregator: 'sum';
  values: Array<MetricValueWithName<L | 'le'>>;
}

export interface HistogramChildrenConfig<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  /** Upper bounds in increasing order, as prom-client's `buckets`. */
  buckets: readonly number[];
  registers: Registry[];
}

/**
 * A Prometheus histogram whose children are resolved once per label set, registered like a
 * prom-client metric. prom-client's `observe` validates the labels, builds a string key from them
 * and looks it up on every call (about a microsecond here, with a string to collect); a child found
 * here once observes into an array, and finding it builds no key ({@link LabelIndex}). A scrape
 * writes the same series as prom-client's Histogram: `_bucket` (cumulative, with `le`), `_sum`
 * and `_count`.
 *
 * @example
 * const durations = new HistogramChildren({ name: 'x_seconds', help: '…', labelNames: ['route'], buckets: [0.1, 1], registers: [registry] });
 * durations.child('/v1/retry').observe(0.004);
 */
export class HistogramChildren<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  private readonly labelNames: readonly L[];
  private readonly bounds: readonly number[];
  private readonly children = new LabelIndex<Child<L>>((values) => this.created(values));

  constructor(config: HistogramChildrenConfig<L>) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    this.bounds = config.buckets;
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The child of these label values, in the label order given at construction. */
  child(...values: LabelValue[]): HistogramChild {
    return this.children.get(values);
  }

  private created(values: readonly LabelValue[]): Child<L> {
    const bounds = this.bounds;
    const labels = labelsOf(this.labelNames, values) as Child<L>['labels'];
    const child: Child<L> = {
      labels,
      counts: new Array<number>(bounds.length + 1).fill(0),
      sum: 0,
      count: 0,
      observe(value: number) {
        let bucket = 0;
        while (bucket < bounds.length && value > bounds[bucket]) bucket++;
        child.counts[bucket]++;
        child.sum += value;
        child.count++;
      },
    };
    return child;
  }

  /** The series, as the registry reads a metric. */
  async get(): Promise<HistogramSeries<L>> {
    const values: Array<MetricValueWithName<L | 'le'>> = [];
    for (const child of this.children.children()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += child.counts[i];
        values.push({ labels: { le: bound, ...child.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push(
        { labels: { le: '+Inf', ...child.labels }, value: child.count, metricName: `${this.name}_bucket` },
        { labels: child.labels, value: child.sum, metricName: `${this.name}_sum` },
        { labels: child.labels, value: child.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Forgets every child and what it observed. */
  reset(): void {
    this.children.clear();
  }
}
