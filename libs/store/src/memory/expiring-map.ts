/** Writes between two sweeps of expired entries, so entries nobody reads again do not pile up. */
const SWEEP_EVERY = 1024;

/** A Map whose entries expire at an instant, as Redis keys with a TTL do; read with the store's clock. */
export class ExpiringMap<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private writes = 0;

  /** The live value, or undefined (an expired entry is dropped). */
  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, expiresAt: number, now: number): void {
    if (++this.writes % SWEEP_EVERY === 0) {
      for (const [stored, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(stored);
    }
    this.entries.set(key, { value, expiresAt });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}
