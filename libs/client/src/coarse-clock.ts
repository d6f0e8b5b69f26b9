import type { Clock } from '@sluice/core';

/** Readings given out before the system clock is read again, within one millisecond tick. */
const READS_PER_READING = 128;

/**
 * The system clock, read at most once per millisecond tick and per 128 readings: a call's start and
 * end (its deadline, its latency, its second of the local window) mostly share readings with other
 * calls. Reading the system clock costs 60 ns or more on some hosts (a virtual machine's clock
 * source), half of what a whole call through a closed breaker may cost; nginx caches its time per
 * event-loop iteration the same way. A reading is at most a millisecond old, unless a blocked event
 * loop delays the tick; then it is at most 128 readings old (about 64 calls started and ended). The
 * tick's timer runs only while the clock is being read, and never keeps the process alive.
 * @example
 * const clock = new CoarseClock();
 * const startedAt = clock.now();
 */
export class CoarseClock implements Clock {
  private reading = 0;
  /** Readings left before the system clock is read again; 0 once the tick passed. */
  private left = 0;
  private readSinceTick = false;
  private ticker: NodeJS.Timeout | undefined;

  now(): number {
    this.readSinceTick = true;
    if (this.left > 0) {
      this.left--;
      return this.reading;
    }
    this.reading = Date.now();
    this.left = READS_PER_READING - 1;
    if (this.ticker === undefined) this.startTicking();
    return this.reading;
  }

  private startTicking(): void {
    this.ticker = setInterval(() => this.tick(), 1);
    this.ticker.unref();
  }

  /** A millisecond passed: the next reading reads the system clock; a tick without readings stops the timer. */
  private tick(): void {
    this.left = 0;
    if (this.readSinceTick) {
      this.readSinceTick = false;
      return;
    }
    clearInterval(this.ticker);
    this.ticker = undefined;
  }
}

/**
 * The process's coarse system clock: the default clock of every client, and of the request
 * context's deadlines. One clock for both, because a reading is never behind one taken before it:
 * a deadline read from a request (or set with `runWithDeadline`) and the attempts made under it
 * count from the same readings, so an attempt never forwards more time than its request was given,
 * however stale a reading a blocked event loop left. (Two clocks could be a few ms apart then.)
 */
export const processClock = new CoarseClock();
