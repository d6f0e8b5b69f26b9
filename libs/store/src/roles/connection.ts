/** The store itself: which backend, whether it answers, and its shutdown. */
export interface StoreConnection {
  readonly kind: 'redis' | 'memory';

  /** Resolves when the store answers. */
  ping(): Promise<void>;

  /** Resolves once connected; rejects with StoreUnavailableError after `timeoutMs`. */
  waitUntilReady(timeoutMs: number): Promise<void>;

  close(): Promise<void>;
}
