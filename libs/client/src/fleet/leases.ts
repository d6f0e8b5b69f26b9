import type { LeaseRenewal } from '@sluice/protocol';
import type { Expiring, TimeoutWatch } from '../timeout-watch';
import type { CoordinatorLink } from './coordinator-link';

/** The coordinator calls a lease needs. */
export interface LeaseTransport {
  /** DELETE /v1/{ns}/deps/{dep}/leases/{id} */
  releaseLease(dep: string, id: string, timeoutMs: number): Promise<void>;
  /** POST /v1/{ns}/deps/{dep}/leases/{id}/renew */
  renewLease(dep: string, id: string, timeoutMs: number): Promise<LeaseRenewal>;
}

/**
 * A concurrency lease held by one attempt. It sits on the attempts' shared timer, due for renewal
 * half a lease after it was asked for (or last renewed); most attempts end long before that.
 */
export class LeaseHold implements Expiring {
  /** When the renewal is due (real time, epoch ms). */
  expiresAt: number;
  watchPrev: Expiring | undefined = undefined;
  watchNext: Expiring | undefined = undefined;
  released = false;
  /** Renewals that succeeded. */
  renewals = 0;

  constructor(
    readonly dependency: string,
    readonly id: string,
    /** The lease's duration, in ms. */
    readonly leaseMs: number,
    askedAt: number,
    private readonly keeper: LeaseKeeper,
  ) {
    this.expiresAt = askedAt + leaseMs / 2;
  }

  expire(): void {
    this.keeper.renew(this);
  }
}

/**
 * Holds, renews and releases the fleet's concurrency leases. A release is sent when the attempt
 * settles and not waited for (the caller has its result already); each call is bounded by the
 * timeout. A lease whose release or renewal is lost expires on its own after `leaseMs`. A 404
 * (the lease already expired) is no sign of an unreachable coordinator; anything else is.
 */
export class LeaseKeeper {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly transport: LeaseTransport,
    private readonly link: CoordinatorLink,
    private readonly timeouts: TimeoutWatch,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Holds a lease granted by admit, asked for at `askedAt` (real time): its renewal is put on the
   * shared timer.
   */
  hold(dependency: string, id: string, leaseMs: number, askedAt: number): LeaseHold {
    const hold = new LeaseHold(dependency, id, leaseMs, askedAt, this);
    this.timeouts.add(hold);
    return hold;
  }

  /**
   * Releases a lease (once), without waiting for the answer; `answered` runs once it is answered
   * (or failed), when the fleet has the slot back.
   */
  release(hold: LeaseHold, answered?: () => void): void {
    if (hold.released) return;
    hold.released = true;
    this.timeouts.delete(hold);
    this.track(
      this.transport
        .releaseLease(hold.dependency, hold.id, this.timeoutMs)
        .then(
          () => this.link.succeeded('release'),
          (error: unknown) => this.failed('release', error),
        )
        .finally(answered),
    );
  }

  /** Releases a lease nobody holds: one granted in an answer that came after the caller stopped waiting. */
  releaseUnheld(dependency: string, id: string): void {
    this.release(new LeaseHold(dependency, id, 0, 0, this));
  }

  /** Extends a lease still held; due again half a lease after the renewal was sent. */
  renew(hold: LeaseHold): void {
    if (hold.released) return;
    const sentAt = Date.now();
    const timeoutMs = Math.max(1, Math.min(this.timeoutMs, Math.floor(hold.leaseMs / 2)));
    this.track(
      this.transport.renewLease(hold.dependency, hold.id, timeoutMs).then(
        () => {
          this.link.succeeded('renew');
          hold.renewals++;
          if (hold.released) return;
          hold.expiresAt = sentAt + hold.leaseMs / 2;
          this.timeouts.add(hold);
        },
        // Not renewed: the lease runs out on its own, and the attempt goes on.
        (error: unknown) => this.failed('renew', error),
      ),
    );
  }

  /** Resolves once the releases and renewals under way have ended (each is bounded by the timeout). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private track(promise: Promise<void>): void {
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise));
  }

  private failed(during: string, error: unknown): void {
    if ((error as { status?: number } | undefined)?.status === 404) return;
    this.link.failed(during, error);
  }
}
