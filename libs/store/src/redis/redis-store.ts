import { StoreUnavailableError } from '../errors';
import { SluiceKeys } from '../keys';
import type {
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
