/** A value cached by key, and when its read started (the store's timeout runs from there). */
interface CacheEntry<T> {
  value: Promise<T>;
  /** Infinity while the read is in flight, so concurrent callers share it. */
  expiresAt: number;
  startedAt: number;
  /** What `value` resolved to, once it has. */
  settled?: { value: T };
}

export interface StaleOnErrorCacheOptions<T> {
  /** Reads the value of `key` from its source (the store). */
  load: (key: string) => Promise<T>;
  /** How long a value read is used without reading it again. */
  ttlMs: number;
  /** How long the value last read is used again after a read failed, before the next try. */
  staleRetryMs: number;
  /** Most keys kept; the one used least recently goes first. */
  maxEntries: number;
  /** Called as a read of `key` starts. */
  onRead?: (key: string) => void;
  /** Called for a key dropped to stay within maxEntries. */
  onEvict?: (key: string) => void;
}

/**
 * Values read by key, each shared by the callers that ask while its read is in flight and used for
 * a TTL. A read that fails answers the value last read (for staleRetryMs, then it is tried again),
 * even when an invalidation dropped the entry in between; with nothing read yet it fails, and the
 * next call reads again. A caller that joined a shared read late has not waited a whole store
 * timeout yet when that read fails, so it reads once more itself.
 */
export class StaleOnErrorCache<T> {
  private readonly entries = new Map<string, CacheEntry<T>>();
  /** Each key's value as last read, and when that read started: what a failed read answers. */
  private readonly lastRead = new Map<string, { value: T; startedAt: number }>();

  constructor(private readonly options: StaleOnErrorCacheOptions<T>) {}

  /** How many keys are cached. */
  get size(): number {
    return this.entries.size;
  }

  /** The value of `key` if the cache holds it unexpired, without a promise: what get() answers at once. */
  fresh(key: string): T | undefined {
    const cached = this.entries.get(key);
    return cached && cached.expiresAt !== Infinity && cached.expiresAt > Date.now() ? cached.settled?.value : undefined;
  }

  /** The value of `key`, from the cache or one shared read. */
  async get(key: string): Promise<T> {
    const cached = this.entries.get(key);
    const joinedAt = Date.now();
    const inFlight = cached?.expiresAt === Infinity;
    if (cached && !inFlight && cached.expiresAt > joinedAt) return cached.value;
    const entry = cached && inFlight ? cached : this.startRead(key);
    try {
      return await entry.value;
    } catch (error) {
      if (entry.startedAt >= joinedAt) throw error;
      return this.startRead(key).value;
    }
  }

  /** The next use of `key` reads it again; what was read is kept as the fallback. */
  invalidate(key: string): void {
    const cached = this.entries.get(key);
    // A read in flight may have started before the change: forget it. A finished one is kept
    // expired, as the fallback should the next read fail.
    if (cached?.expiresAt === Infinity) this.entries.delete(key);
    else if (cached) cached.expiresAt = 0;
  }

  /** Drops everything known of `key`, the fallback included. */
  forget(key: string): void {
    this.entries.delete(key);
    this.lastRead.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.lastRead.clear();
  }

  /** Starts one shared read of `key` and caches it. */
  private startRead(key: string): CacheEntry<T> {
    const last = this.lastRead.get(key);
    const stale = last && Promise.resolve(last.value);
    this.options.onRead?.(key);
    const startedAt = Date.now();
    const entry: CacheEntry<T> = { value: this.options.load(key), expiresAt: Infinity, startedAt };
    entry.value.then(
      (value) => {
        const known = this.lastRead.get(key);
        if (this.entries.has(key) && (!known || known.startedAt <= startedAt)) {
          this.lastRead.set(key, { value, startedAt });
        }
        if (this.entries.get(key) === entry) {
          entry.settled = { value };
          entry.expiresAt = startedAt + this.options.ttlMs;
        }
      },
      () => {
        if (this.entries.get(key) !== entry) return;
        if (stale) {
          // The source did not answer: keep using what was read last, and try again soon.
          entry.value = stale;
          entry.settled = { value: last.value };
          entry.expiresAt = Date.now() + this.options.staleRetryMs;
        } else {
          // Not cached: the next call tries the source again.
          this.entries.delete(key);
        }
      },
    );
    if (stale) entry.value = entry.value.catch(() => stale);
    this.entries.delete(key); // re-inserted last: the oldest entry is evicted first
    this.entries.set(key, entry);
    while (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.forget(oldest);
      this.options.onEvict?.(oldest);
    }
    return entry;
  }
}
