import { afterPendingReads } from '@sluice/core';
import { StoreUnavailableError } from '../errors';

/**
 * Bounds how long a Redis reply may take, timing Redis rather than the event loop.
 *
 * A plain `setTimeout` raced against the reply fails calls whose reply is already in the socket:
 * Node runs expired timers before it reads sockets, so any event-loop stall at least as long as
 * the timeout (a burst of requests, a GC pause) fails every call outstanding across it. And a
 * burst queues more work on Redis than it can finish within the timeout, although Redis never
 * stops answering.
 *
 * So a call fails only when its connection (its `lane`: the server, or the Cluster node that owns
 * the call's slot) has delivered no reply for `timeoutMs` since the call was written. A call is
 * written when the event loop next reaches its check phase (ioredis flushes its automatic
 * pipeline there, and a long turn of the loop may have issued many calls before that), so the
 * clock starts at that point, not when the call was issued. Silence is checked
 * only after the event loop has read what arrived (two turns of the poll phase, so a poll that
 * could not take every ready socket at once gets a second go). Replies on one connection come in
 * order, so a connection that keeps answering is still working towards this call; a stopped or
 * stuck Redis answers nothing and fails every call on it within `timeoutMs`. No call waits more
 * than `maxWaitMs` in all.
 *
 * A connection can also be silent because Redis is busy with other clients' work (another
 * instance's pipeline of hundreds of scripts). With a `probe` (a PING on a connection of its own),
 * a silent connection is asked about before its calls fail: a Redis that answers the probe within
 * `timeoutMs` is alive and working through its queue, and the calls wait on; one that does not is
 * stalled or gone. One probe per lane is in flight at a time.
 *
 * @example
 * const deadline = new ReplyDeadline(50);
 * const reply = await deadline.guard(client.ping());
 */
export class ReplyDeadline {
  /** When each lane last delivered a reply (performance.now()). */
  private readonly lastReplyAt = new Map<string, number>();

  /** Probes in flight, by lane: true once Redis answered within the timeout. */
  private readonly probes = new Map<string, Promise<boolean>>();

  constructor(
    readonly timeoutMs: number,
    readonly maxWaitMs = timeoutMs * 10,
    private readonly probe?: (lane: string) => Promise<unknown> | undefined,
  ) {}

  guard<T>(operation: Promise<T>, lane = ''): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // One record per call and the deadline's own methods: no closures of its own per call.
      const call: GuardedCall = { lane, settled: false, writtenAt: performance.now(), timer: undefined, reject };
      // Queued after ioredis's own flush of the pipeline this call joined.
      setImmediate(startClock, this, call);
      operation.then(
        (value) => {
          this.lastReplyAt.set(lane, performance.now());
          if (call.settled) return;
          call.settled = true;
          clearTimeout(call.timer);
          resolve(value);
        },
        (error: unknown) => {
          // An error reply is a reply too: the connection is answering.
          if ((error as Error)?.name === 'ReplyError') this.lastReplyAt.set(lane, performance.now());
          if (call.settled) return;
          call.settled = true;
          clearTimeout(call.timer);
          reject(
            error instanceof StoreUnavailableError
              ? error
              : new StoreUnavailableError(`Redis failed: ${(error as Error).message}`, { cause: error }),
          );
        },
      );
    });
  }

  /** The call was written: its clock starts. */
  startClock(call: GuardedCall): void {
    if (call.settled) return;
    call.writtenAt = performance.now();
    this.arm(call, this.timeoutMs);
  }

  private arm(call: GuardedCall, ms: number): void {
    call.timer = setTimeout(checkAfterPendingReads, ms, this, call);
  }

  /** Whether the call's connection has been silent too long: wait on, ask the probe, or fail it. */
  check(call: GuardedCall): void {
    if (call.settled) return;
    const now = performance.now();
    const silentFor = now - Math.max(call.writtenAt, this.lastReplyAt.get(call.lane) ?? 0);
    const mayWait = now - call.writtenAt < this.maxWaitMs;
    if (silentFor < this.timeoutMs && mayWait) {
      this.arm(call, this.timeoutMs - silentFor);
      return;
    }
    if (mayWait && this.probe) {
      void this.alive(call.lane).then((alive) => (alive ? this.check(call) : this.fail(call)));
      return;
    }
    this.fail(call);
  }

  private fail(call: GuardedCall): void {
    if (call.settled) return;
    call.settled = true;
    call.reject(new StoreUnavailableError(`Redis did not answer within ${this.timeoutMs} ms`));
  }

  /** Whether Redis answers the lane's probe within the timeout (one probe per lane at a time). */
  private alive(lane: string): Promise<boolean> {
    let pending = this.probes.get(lane);
    if (!pending) {
      pending = new Promise<boolean>((resolve) => {
        const ping = this.probe?.(lane);
        if (!ping) return resolve(false);
        const timer = setTimeout(() => afterPendingReads(() => resolve(false)), this.timeoutMs);
        ping.then(
          () => {
            clearTimeout(timer);
            this.lastReplyAt.set(lane, performance.now());
            resolve(true);
          },
          () => {
            clearTimeout(timer);
            resolve(false);
          },
        );
      }).finally(() => this.probes.delete(lane));
      this.probes.set(lane, pending);
    }
    return pending;
  }
}

/** One guarded call while it is outstanding. */
interface GuardedCall {
  /** The connection it travels on. */
  lane: string;
  settled: boolean;
  /** When it was written (performance.now()): its clock starts there. */
  writtenAt: number;
  timer: NodeJS.Timeout | undefined;
  reject: (error: unknown) => void;
}

function startClock(deadline: ReplyDeadline, call: GuardedCall): void {
  deadline.startClock(call);
}

function checkAfterPendingReads(deadline: ReplyDeadline, call: GuardedCall): void {
  afterPendingReads(() => deadline.check(call));
}
