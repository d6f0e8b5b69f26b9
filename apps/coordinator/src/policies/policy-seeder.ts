import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { PolicyDocumentRef, Store } from '@sluice/store';
import { ResetWatcher } from '../store/reset-watcher';
import { STORE } from '../store/store.provider';
import type { PoliciesFile } from './policies-file';
import { policyTargetLabel } from './policy-target';
import { POLICIES_FILE, PolicyService } from './policy.service';

/** How long boot waits for the first seeding pass before going on without it. */
const BOOT_WAIT_MS = 2000;
/** Retries after a failed pass wait 1 s, 2 s, 4 s, … up to this. */
const MAX_RETRY_DELAY_MS = 30_000;
/** Most document names listed in the boot log line. */
const LOGGED_NAMES = 20;

/** One document of the policies file, to be written to the store if it has none. */
export interface SeedDocument extends PolicyDocumentRef {
  namespace: string;
  document: unknown;
}

export interface SeedResult {
  /** Written now. */
  seeded: SeedDocument[];
  /** Left as they were: the store already held a document (the admin API owns it). */
  kept: SeedDocument[];
}

/** Every namespace document of the policies file: namespace defaults, dependencies, limits, queues. */
export function seedDocuments(file: PoliciesFile): SeedDocument[] {
  const documents: SeedDocument[] = [];
  for (const [namespace, entry] of Object.entries(file.namespaces)) {
    if (entry.default !== undefined) documents.push({ namespace, kind: 'default', name: '', document: entry.default });
    const named = [
      ['dep', entry.dependencies],
      ['limit', entry.limits],
      ['queue', entry.queues],
    ] as const;
    for (const [kind, byName] of named) {
      for (const [name, document] of Object.entries(byName ?? {})) documents.push({ namespace, kind, name, document });
    }
  }
  return documents;
}

/**
 * Seeds the store from the policies file at boot: each namespace document is written only where
 * the store holds none (`ifAbsent`), so after the first boot the admin API is the source of truth
 * and a restart never undoes an operator's change. If the store is unreachable, boot goes on and
 * seeding is retried in the background with capped backoff until it succeeds or the app stops.
 * After a store reset (ResetWatcher) the whole file is seeded again at once, without a restart.
 */
@Injectable()
export class PolicySeeder implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Policies');
  private readonly documents: SeedDocument[];
  private pending: SeedDocument[];
  private timer?: NodeJS.Timeout;
  private failures = 0;
  private stopped = false;

  constructor(
    @Inject(POLICIES_FILE) file: PoliciesFile,
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    @Optional() watcher?: ResetWatcher,
  ) {
    this.documents = seedDocuments(file);
    this.pending = this.documents;
    watcher?.onReset(() => this.reseed());
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.pending.length === 0) return;
    let waited: NodeJS.Timeout | undefined;
    await Promise.race([
      this.attempt(),
      new Promise<void>((resolve) => {
        waited = setTimeout(resolve, BOOT_WAIT_MS);
        waited.unref();
      }),
    ]);
    clearTimeout(waited);
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Seeds every document of the file again, now (the store lost them); failures are retried as at boot. */
  async reseed(): Promise<void> {
    if (this.documents.length === 0 || this.stopped) return;
    clearTimeout(this.timer);
    this.pending = this.documents;
    this.failures = 0;
    await this.attempt();
  }

  /** True once every document of the file is in the store (seeded now, or kept). */
  get done(): boolean {
    return this.pending.length === 0;
  }

  /**
   * One pass over the documents not yet in the store; rejects if any write failed (the ones that
   * succeeded are not written again).
   */
  async seed(): Promise<SeedResult> {
    const result: SeedResult = { seeded: [], kept: [] };
    const outcomes = await Promise.allSettled(
      this.pending.map(async (seed) => {
        const outcome = await this.store.writePolicy(
          seed.namespace,
          { kind: seed.kind, name: seed.name },
          seed.document,
          { ifAbsent: true },
        );
        (outcome.outcome === 'written' ? result.seeded : result.kept).push(seed);
      }),
    );
    const failed = this.pending.filter((_, i) => outcomes[i].status === 'rejected');
    this.pending = failed;
    for (const namespace of new Set(result.seeded.map((seed) => seed.namespace))) {
      this.policies.invalidate(namespace);
    }
    const rejection = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (rejection) throw rejection.reason;
    return result;
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    try {
      const { seeded, kept } = await this.seed();
      this.failures = 0;
      this.logger.log(
        `policies file: ${seeded.length} document(s) seeded${names(seeded)}, ${kept.length} already in the store ` +
          `and kept${names(kept)} (the admin API owns stored documents; the file only seeds missing ones)`,
      );
    } catch (error) {
      if (this.stopped) return;
      this.failures++;
      const delayMs = Math.min(1000 * 2 ** Math.min(this.failures - 1, 30), MAX_RETRY_DELAY_MS);
      this.logger.warn(
        `cannot seed ${this.pending.length} policy document(s) from the policies file ` +
          `(${(error as Error).message}); retrying in ${delayMs} ms`,
      );
      this.timer = setTimeout(() => void this.attempt(), delayMs);
      this.timer.unref();
    }
  }
}

function names(documents: SeedDocument[]): string {
  if (documents.length === 0) return '';
  const listed = documents.slice(0, LOGGED_NAMES).map((seed) => `${seed.namespace}/${policyTargetLabel(seed)}`);
  return ` (${listed.join(', ')}${documents.length > LOGGED_NAMES ? ', …' : ''})`;
}
