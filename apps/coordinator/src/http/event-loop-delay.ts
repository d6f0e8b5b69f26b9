import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** How often the event loop's mean delay is sampled, and how many samples in a row must be high. */
export const DELAY_SAMPLE_MS = 1000;
export const DELAY_SAMPLES = 3;
/** The resolution of Node's delay monitor: its timer's own period, taken off every reading. */
const RESOLUTION_MS = 10;

/**
 * The delay a loop that is behind all the time shows: the smallest of the last `samples` means
 * (0 until there are that many). One stall, a burst of connections parsed at once or the boot
 * itself, is high in one sample only and says nothing about capacity; a loop past its capacity
 * is high in every one.
 * @example
 * sustainedDelayMs([1500, 4, 3], 3) // 3: one stall, not an overload
 */
export function sustainedDelayMs(means: readonly number[], samples = DELAY_SAMPLES): number {
  return means.length < samples ? 0 : Math.min(...means.slice(-samples));
}

/**
 * Samples the event loop's mean delay every DELAY_SAMPLE_MS with Node's own monitor
 * (`perf_hooks.monitorEventLoopDelay`) and answers the sustained delay. Written here rather than
 * taken from `@fastify/under-pressure`, whose single-sample mean sheds a healthy instance after
 * one burst.
 */
export class EventLoopDelay {
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  private readonly means: number[] = [];
  /** sustainedDelayMs(means), worked out once a sample rather than once a request. */
  private sustainedMs = 0;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.histogram.enable();
    this.timer = setInterval(() => this.sample(), DELAY_SAMPLE_MS);
    this.timer.unref();
  }

  /** The sustained delay over the last DELAY_SAMPLES samples, in ms. */
  get ms(): number {
    return this.sustainedMs;
  }

  stop(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }

  private sample(): void {
    const mean = this.histogram.count > 0 ? this.histogram.mean / 1e6 - RESOLUTION_MS : 0;
    this.means.push(Math.max(0, mean));
    if (this.means.length > DELAY_SAMPLES) this.means.shift();
    this.histogram.reset();
    this.sustainedMs = sustainedDelayMs(this.means);
  }
}
