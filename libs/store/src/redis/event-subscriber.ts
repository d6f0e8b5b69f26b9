import type { EventHandler, StoreEvent, Unsubscribe } from '../store';
import type { RedisClient } from './connection';

const UNSUBSCRIBE_TIMEOUT_MS = 1000;

function withTimeout<T>(operation: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([operation, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Fans sharded pub/sub messages out to handlers over one subscriber connection; a channel is
 * subscribed while at least one handler wants it.
 */
export class RedisEventSubscriber {
  private readonly handlers = new Map<string, Set<EventHandler>>();

  constructor(private readonly subscriber: RedisClient) {
    subscriber.on('smessage', (channel: string, message: string) => this.dispatch(channel, message));
    subscriber.on('error', () => undefined); // reconnection is automatic; errors are the store's to report
  }

  async subscribe(channel: string, handler: EventHandler): Promise<Unsubscribe> {
    let handlers = this.handlers.get(channel);
    if (!handlers) {
      handlers = new Set();
      this.handlers.set(channel, handlers);
      await this.subscriber.ssubscribe(channel);
    }
    handlers.add(handler);
    return async () => {
      const current = this.handlers.get(channel);
      if (!current?.delete(handler) || current.size > 0) return;
      this.handlers.delete(channel);
      // Never wait on a lost connection (shutdown must not hang): a channel left subscribed only
      // brings messages nobody handles.
      if (this.subscriber.status !== 'ready') return;
      await withTimeout(this.subscriber.sunsubscribe(channel), UNSUBSCRIBE_TIMEOUT_MS).catch(() => undefined);
    };
  }

  close(): void {
    this.handlers.clear();
    this.subscriber.disconnect();
  }

  private dispatch(channel: string, message: string): void {
    const handlers = this.handlers.get(channel);
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
