import type { Store } from '@sluice/store';
import { ApiError } from '../common/api-error';

/** A namespace unused for a day frees its place under the cap. */
export const NAMESPACE_RETENTION_MS = 24 * 60 * 60 * 1000;
/** How long this instance trusts a namespace's registration before renewing it in the store. */
const RENEW_AFTER_MS = 60_000;
/** Most namespaces this instance remembers as registered (the oldest are forgotten first). */
const MAX_REMEMBERED = 100_000;

/**
 * The operations that give a namespace state. Each first registers the namespace, under the
 * deployment's cap; reads register nothing, so asking about a namespace never creates it.
 */
const STATE_CREATING = [
  'registerDependency',
  'recordOutcomes',
  'decideRetry',
  'decideRetries',
  'admit',
  'takeRateLimit',
  'setBreaker',
  'writePolicy',
  'claimIdempotencyKey',
  'recordDeliveryAttempt',
  'noteDeadLetterQueue',
] as const satisfies ReadonlyArray<keyof Store>;

/** What the capped store remembers of the namespaces it registered. */
export interface RemembersNamespaces {
  rememberedNamespaces(): number;
  /** The store lost its data: each namespace is registered again at its next use. */
  forgetNamespaces(): void;
}

export const tooManyNamespaces = (cap: number): ApiError =>
  new ApiError(422, 'too_many_namespaces', `the deployment already holds ${cap} namespaces`, [
    { field: 'ns', message: `the deployment is at its cap of ${cap} namespaces (SLUICE_MAX_NAMESPACES)` },
  ]);

/**
 * Wraps a Store so no more than `cap` namespaces (0: no cap) ever hold state. Known namespaces
 * cost a map look-up; a new one, or one due for renewal, one store call.
 */
export function capNamespaces(store: Store, cap: number): Store & RemembersNamespaces {
  const renewAt = new Map<string, number>();
  const registration = { cap: cap > 0 ? cap : Number.MAX_SAFE_INTEGER, retentionMs: NAMESPACE_RETENTION_MS };

  const inFlight = new Map<string, Promise<boolean>>();
  const registerNow = async (namespace: string, now: number): Promise<boolean> => {
    if (!(await store.registerNamespace(namespace, registration))) return false;
    renewAt.delete(namespace);
    renewAt.set(namespace, now + RENEW_AFTER_MS);
    while (renewAt.size > MAX_REMEMBERED) renewAt.delete(renewAt.keys().next().value as string);
    return true;
  };
  // Simultaneous first uses of one namespace share one store call.
  const register = async (namespace: string): Promise<void> => {
    const now = Date.now();
    if ((renewAt.get(namespace) ?? 0) > now) return;
    let pending = inFlight.get(namespace);
    if (!pending) {
      pending = registerNow(namespace, now).finally(() => inFlight.delete(namespace));
      inFlight.set(namespace, pending);
    }
    if (!(await pending)) throw tooManyNamespaces(cap);
  };

  const capped = Object.create(store) as Store & RemembersNamespaces;
  for (const operation of STATE_CREATING) {
    const original = store[operation].bind(store) as (...args: unknown[]) => Promise<unknown>;
    (capped as unknown as Record<string, unknown>)[operation] = (...args: unknown[]) => {
      const [first] = args;
      const namespace = typeof first === 'string' ? first : (first as { namespace: string }).namespace;
      // A namespace registered recently costs a map look-up and no promise of its own.
      if ((renewAt.get(namespace) ?? 0) > Date.now()) return original(...args);
      return register(namespace).then(() => original(...args));
    };
  }
  capped.rememberedNamespaces = () => renewAt.size;
  capped.forgetNamespaces = () => renewAt.clear();
  return capped;
}
