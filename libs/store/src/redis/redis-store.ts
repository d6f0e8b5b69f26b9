import { StoreUnavailableError } from '../errors';
import { SluiceKeys } from '../keys';
import type {
  DeadLetterPageRequest,
  DeadLetterRetention,
  DeliveryAttemptOutcome,
  DeliveryAttemptRecord,
  IdempotencyClaim,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyCompletionOutcome,
  IdempotencyRecord,
  IdempotencyRef,
  IdempotencyReleaseOutcome,
  QueueRef,
  StoredDeadLetter,
  StoredDeadLetterPage,
  DependencyReadWindows,
  DependencyRef,
  DependencyRegistration,
  DependencySnapshot,
  OutcomeBatch,
  OutcomeTotals,
  OutcomeWindows,
  RetryBudgetOutcome,
  RetryBudgetRequest,
  RetryBudgetVerdict,
  Store,
} from '../store';
import type { RedisClient } from './connection';
import { SCRIPTS, loadScript, type ScriptName } from './scripts';

type ScriptArgument = string | number;
type ScriptCommand = (...args: ScriptArgument[]) => Promise<unknown>;

const RETRY_VERDICTS: Record<number, RetryBudgetVerdict> = {
  1: 'granted',
  2: 'budget_exhausted',
  3: 'deadline_exceeded',
};

const RELEASE_OUTCOMES: Record<number, IdempotencyReleaseOutcome> = { 0: 'lease_lost', 1: 'released', 2: 'absent' };

export interface RedisStoreOptions {
  client: RedisClient;
  keys?: SluiceKeys;
  /** Most time one operation may take before it fails as StoreUnavailableError. */
  timeoutMs: number;
}

/** The Store on Redis (standalone or Cluster): each method is one Lua script call. */
export class RedisStore implements Store {
  readonly kind = 'redis';
  private readonly keys: SluiceKeys;

  constructor(private readonly options: RedisStoreOptions) {
    this.keys = options.keys ?? new SluiceKeys();
    for (const [name, { numberOfKeys }] of Object.entries(SCRIPTS)) {
      options.client.defineCommand(name, { lua: loadScript(name as ScriptName), numberOfKeys });
    }
  }

  get client(): RedisClient {
    return this.options.client;
  }

  async decideRetry(ref: DependencyRef, request: RetryBudgetRequest): Promise<RetryBudgetOutcome> {
    const { budget } = request;
    const reply = await this.run<number[]>(
      'decide_retry',
      this.keys.dependency(ref.namespace, ref.dependency).budget,
      budget.ratio,
      budget.minRetriesPerSecond,
      budget.windowSeconds,
      request.delayMs,
      request.deadlineMs ?? -1,
    );
    const [code, retries, requests, limit] = reply;
    return {
      verdict: RETRY_VERDICTS[code],
      budget: { retries, requests, limit, windowSeconds: budget.windowSeconds },
    };
  }

  async recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, windows: OutcomeWindows): Promise<OutcomeTotals> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const [successes, failures, slow] = await this.run<number[]>(
      'record_outcomes',
      keys.budget,
      keys.outcomes,
      batch.requests,
      batch.successes,
      batch.failures,
      batch.slow,
      windows.budgetWindowSeconds,
      windows.outcomeWindowSeconds,
    );
    return { successes, failures, slow };
  }

  async readDependency(ref: DependencyRef, windows: DependencyReadWindows): Promise<DependencySnapshot> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const { budget } = windows;
    const [retries, requests, limit, successes, failures, slow] = await this.run<number[]>(
      'read_dependency',
      keys.budget,
      keys.outcomes,
      budget.ratio,
      budget.minRetriesPerSecond,
      budget.windowSeconds,
      windows.outcomeWindowSeconds,
    );
    return {
      budget: { retries, requests, limit, windowSeconds: budget.windowSeconds },
      outcomes: { successes, failures, slow },
    };
  }

  async registerDependency(ref: DependencyRef, registration: DependencyRegistration): Promise<boolean> {
    const reply = await this.run<number>(
      'register_dependency',
      this.keys.namespace(ref.namespace).dependencies,
      ref.dependency,
      registration.cap,
      registration.retentionMs,
    );
    return reply === 1;
  }

  async claimIdempotencyKey(ref: IdempotencyRef, claim: IdempotencyClaim): Promise<IdempotencyClaimOutcome> {
    const [code, value] = await this.run<[number, number | string | undefined]>(
      'claim_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
      claim.fingerprint,
      claim.token,
      claim.leaseMs,
      claim.retentionMs,
    );
    switch (code) {
      case 1:
        return { outcome: 'claimed', leaseExpiresAt: Number(value) };
      case 2:
        return { outcome: 'recovered', leaseExpiresAt: Number(value) };
      case 3:
        return { outcome: 'completed', response: String(value) };
      case 4:
        return { outcome: 'in_flight', leaseRemainingMs: Number(value) };
      default:
        return { outcome: 'mismatch' };
    }
  }

  async completeIdempotencyKey(
    ref: IdempotencyRef,
    completion: IdempotencyCompletion,
  ): Promise<IdempotencyCompletionOutcome> {
    const reply = await this.run<number>(
      'complete_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
      completion.token,
      completion.response,
    );
    return reply === 1 ? 'completed' : 'lease_lost';
  }

  async releaseIdempotencyKey(ref: IdempotencyRef, token: string): Promise<IdempotencyReleaseOutcome> {
    const reply = await this.run<number>(
      'release_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
      token,
    );
    return RELEASE_OUTCOMES[reply];
  }

  async readIdempotencyKey(ref: IdempotencyRef): Promise<IdempotencyRecord | null> {
    const reply = await this.run<[IdempotencyRecord['state'], number, number, number, number] | []>(
      'read_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
    );
    if (reply.length === 0) return null;
    const [state, createdAt, expiresAt, leaseExpiresAt, completedAt] = reply;
    return {
      state,
      createdAt,
      expiresAt,
      ...(leaseExpiresAt >= 0 ? { leaseExpiresAt } : {}),
      ...(completedAt >= 0 ? { completedAt } : {}),
    };
  }

  async recordDeliveryAttempt(ref: QueueRef, attempt: DeliveryAttemptRecord): Promise<DeliveryAttemptOutcome> {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    const [count, deadLetter, parkedNow, depth] = await this.run<number[]>(
      'record_delivery_attempt',
      this.keys.deliveryAttempts(ref.namespace, ref.queue, attempt.messageId),
      queue.deadLetters,
      queue.deadLetterIndex,
      attempt.messageId,
      attempt.maxAttempts,
      attempt.error ?? '',
      attempt.payload ?? '',
      attempt.attemptRetentionMs,
      attempt.deadLetters.retentionMs,
      attempt.deadLetters.maxLength,
    );
    return { attempt: count, deadLetter: deadLetter === 1, parkedNow: parkedNow === 1, depth };
  }

  async ackDelivery(ref: QueueRef, messageId: string): Promise<boolean> {
    const reply = await this.run<number>(
      'ack_delivery',
      this.keys.deliveryAttempts(ref.namespace, ref.queue, messageId),
    );
    return reply === 1;
  }

  async listDeadLetters(ref: QueueRef, page: DeadLetterPageRequest): Promise<StoredDeadLetterPage> {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    const [depth, next, ...entries] = await this.run<[number, string, ...string[]]>(
      'list_dead_letters',
      queue.deadLetters,
      queue.deadLetterIndex,
      page.limit,
      page.after ?? '',
      page.retention.retentionMs,
      page.retention.maxLength,
    );
    return { items: entries.map(parseDeadLetter), next: next === '' ? null : next, depth };
  }

  async redriveDeadLetter(ref: QueueRef, messageId: string): Promise<StoredDeadLetter | null> {
    const entry = await this.run<string | null>(
      'redrive_dead_letter',
      ...this.deadLetterKeys(ref, messageId),
      messageId,
    );
    return entry === null ? null : parseDeadLetter(entry);
  }

  async purgeDeadLetter(ref: QueueRef, messageId: string): Promise<boolean> {
    return (await this.run<number>('purge_dead_letter', ...this.deadLetterKeys(ref, messageId), messageId)) === 1;
  }

  async countDeadLetters(ref: QueueRef, retention: DeadLetterRetention): Promise<number> {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    return this.run<number>(
      'count_dead_letters',
      queue.deadLetters,
      queue.deadLetterIndex,
      retention.retentionMs,
      retention.maxLength,
    );
  }

  async ping(): Promise<void> {
    await this.guard(this.options.client.ping());
  }

  async waitUntilReady(timeoutMs: number): Promise<void> {
    const { client } = this.options;
    if (client.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        client.off('ready', onReady);
        reject(new StoreUnavailableError(`Redis was not ready within ${timeoutMs} ms`));
      }, timeoutMs);
      client.once('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.options.client.disconnect();
  }

  private deadLetterKeys(ref: QueueRef, messageId: string): [string, string, string] {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    return [queue.deadLetters, queue.deadLetterIndex, this.keys.deliveryAttempts(ref.namespace, ref.queue, messageId)];
  }

  private run<T>(script: ScriptName, ...args: ScriptArgument[]): Promise<T> {
    const command = (this.options.client as unknown as Record<ScriptName, ScriptCommand>)[script];
    return this.guard(command.apply(this.options.client, args) as Promise<T>);
  }

  /** Bounds one operation by the store timeout and turns any failure into StoreUnavailableError. */
  private guard<T>(operation: Promise<T>): Promise<T> {
    const { timeoutMs } = this.options;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`Redis did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    return Promise.race([operation, timeout])
      .catch((error: unknown) => {
        if (error instanceof StoreUnavailableError) throw error;
        throw new StoreUnavailableError(`Redis failed: ${(error as Error).message}`, { cause: error });
      })
      .finally(() => clearTimeout(timer));
  }
}

/** An entry as the Lua scripts encode it (cjson). */
function parseDeadLetter(json: string): StoredDeadLetter {
  const entry = JSON.parse(json) as StoredDeadLetter;
  return {
    messageId: entry.messageId,
    payload: entry.payload ?? null,
    error: entry.error ?? null,
    attempts: entry.attempts,
    deadLetteredAt: entry.deadLetteredAt,
    firstAttemptAt: entry.firstAttemptAt,
  };
}
