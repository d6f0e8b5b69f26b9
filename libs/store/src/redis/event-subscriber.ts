import type { EventHandler, StoreEvent, Unsubscribe } from '../store';
import { StoreUnavailableError } from '../errors';
import { disconnectRedisClient, type RedisClient } from './connection';

const UNSUBSCRIBE_TIMEOUT_MS = 1000;
/** A subscribe waits at most this long for Redis to confirm it: a Redis down or stalled must not hang a stream. */
const SUBSCRIBE_TIMEOUT_MS = 1000;
/** A resubscription Redis refused, on a connection that stays up, is asked again after this. */
const RESUBSCRIBE_RETRY_MS = 500;
/** Told to every handler once a lost subscription is back: events may have been missed meanwhile. */
const RESYNC: StoreEvent = { type: 'resync' };

function withTimeout<T>(operation: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([operation, timeout]).finally(() => clearTimeout(timer));
}

/** One channel's handlers, and the SSUBSCRIBE every one of them waits on. */
interface Channel {
  handlers: Set<EventHandler>;
  confirmed: Promise<void>;
}

/**
 * Fans sharded pub/sub messages out to handlers over one subscriber connection; a channel is
 * subscribed while at least one handler wants it. Every subscribe returns once Redis has
 * confirmed the SSUBSCRIBE (the first caller's or its own); one that Redis refused is asked again
 * by the next. When the connection (or, on a Cluster, a shard's) was lost and is back, the
 * channels are subscribed again and every handler gets a `resync` event: what was published
 * meanwhile is lost, so it reads the state afresh.
 */
export class RedisEventSubscriber {
  private readonly channels = new Map<string, Channel>();
  private lost = false;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly subscriber: RedisClient) {
    subscriber.on('smessage', (channel: string, message: string) => this.dispatch(channel, message));
    subscriber.on('error', () => undefined); // reconnection is automatic; errors are the store's to report
    subscriber.on('close', () => (this.lost = true)); // standalone: the connection went away
    subscriber.on('-node', () => (this.lost = true)); // Cluster: a node (and its shard subscriber) went away
    subscriber.on('ready', () => void this.resubscribe()); // standalone: connected again
    subscriber.on('subscribersReady', () => void this.resubscribe()); // Cluster: shard subscribers back
  }

  async subscribe(channel: string, handler: EventHandler): Promise<Unsubscribe> {
    let entry = this.channels.get(channel);
    if (!entry) {
      const confirmed = withTimeout(this.subscriber.ssubscribe(channel), SUBSCRIBE_TIMEOUT_MS).catch((error) => {
        throw new StoreUnavailableError(`SSUBSCRIBE ${channel}: ${(error as Error).message}`);
      });
      entry = { handlers: new Set(), confirmed: confirmed.then(() => undefined) };
      this.channels.set(channel, entry);
    }
    // Added before the confirmation, so a message right behind it is not missed.
    entry.handlers.add(handler);
    try {
      await entry.confirmed;
    } catch (error) {
      // Refused: forget the attempt, so the next subscribe asks Redis again.
      entry.handlers.delete(handler);
      if (this.channels.get(channel) === entry) this.channels.delete(channel);
      throw error;
    }
    return () => this.unsubscribe(channel, entry, handler);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.channels.clear();
    disconnectRedisClient(this.subscriber);
  }

  private async unsubscribe(channel: string, entry: Channel, handler: EventHandler): Promise<void> {
    if (!entry.handlers.delete(handler) || entry.handlers.size > 0 || this.channels.get(channel) !== entry) return;
    this.channels.delete(channel);
    // Never wait on a lost connection (shutdown must not hang): a channel left subscribed only
    // brings messages nobody handles.
    if (this.subscriber.status !== 'ready') return;
    await withTimeout(this.subscriber.sunsubscribe(channel), UNSUBSCRIBE_TIMEOUT_MS).catch(() => undefined);
  }

  /** After a lost connection: every channel subscribed again (confirmed), then its handlers told to resync. */
  private async resubscribe(): Promise<void> {
    if (!this.lost) return;
    this.lost = false;
    await Promise.all(
      [...this.channels].map(async ([channel, entry]) => {
        try {
          await this.subscriber.ssubscribe(channel);
        } catch {
          this.retryResubscribe();
          return;
        }
        for (const handler of entry.handlers) handler(RESYNC);
      }),
    );
  }

  /** Asks again soon, or when the connection is next ready, whichever comes first. */
  private retryResubscribe(): void {
    this.lost = true;
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (this.subscriber.status === 'ready') void this.resubscribe();
    }, RESUBSCRIBE_RETRY_MS);
    this.retry.unref();
  }

  private dispatch(channel: string, message: string): void {
    const handlers = this.channels.get(channel)?.handlers;
    if (!handlers) return;
    let event: StoreEvent;
    try {
      event = JSON.parse(message) as StoreEvent;
    } catch {
      return;
    }
    for (const handler of handlers) handler(event);
  }
}
