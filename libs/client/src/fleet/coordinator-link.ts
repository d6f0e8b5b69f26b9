import { EventEmitter } from '../events';

/**
 * Where the SDK's fleet decisions come from changed: `active` true means the coordinator stopped
 * answering and the local fallback decides; false means the coordinator answers again.
 * @example
 * sluice.onFallback(({ active, during, error }) => log.warn(`fallback ${active} (${during})`, error));
 */
export interface FallbackChange {
  active: boolean;
  /** What the SDK was doing when it noticed (e.g. `retry`, `report`, `poll`). */
  during: string;
  /** The coordinator failure that started the fallback. */
  error?: unknown;
}

/**
 * A logger for the SDK's few log lines (fallback switches, misconfiguration).
 * @example
 * new Sluice({ baseUrls: ['http://sluice:8080'], namespace: 'shop', logger: pino() });
 */
export interface SluiceLogger {
  warn(message: string): void;
  info(message: string): void;
}

export const consoleLogger: SluiceLogger = {
  warn: (message) => console.warn(`sluice: ${message}`),
  info: (message) => console.info(`sluice: ${message}`),
};

export const silentLogger: SluiceLogger = { warn: () => undefined, info: () => undefined };

/** Tracks whether the coordinator answers, and switches the SDK to and from its local fallback. */
export class CoordinatorLink {
  /** True while the local fallback decides. */
  fallback = false;
  readonly changes = new EventEmitter<FallbackChange>();

  constructor(
    private readonly logger: SluiceLogger,
    private readonly mode: string,
  ) {}

  failed(during: string, error: unknown): void {
    if (this.fallback) return;
    this.fallback = true;
    const why = (error as Error)?.message ?? String(error);
    this.logger.warn(`coordinator unavailable during ${during} (${why}); using the ${this.mode} fallback`);
    this.changes.emit({ active: true, during, error });
  }

  succeeded(during: string): void {
    if (!this.fallback) return;
    this.fallback = false;
    this.logger.info(`coordinator answers again (${during}); back to fleet decisions`);
    this.changes.emit({ active: false, during });
  }
}
