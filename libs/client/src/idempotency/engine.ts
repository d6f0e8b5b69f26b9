import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENT_REPLAYED_HEADER,
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  MAX_STORED_RESPONSE_BYTES,
  type ErrorBody,
  type StoredResponse,
} from '@sluice/protocol';
import type { CoordinatorClient } from '../coordinator-client';
import { isCoordinatorUnavailableError } from '../errors';
import { requestFingerprint } from './fingerprint';

/** The parts of an incoming request the middleware reads; Express, Fastify and Nest requests all have them. */
export interface IncomingRequestLike {
  method?: string;
  url?: string;
  /** Express keeps the full path here when a router is mounted. */
  originalUrl?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

export interface IdempotencyOptions {
  /** Answer 400 to a request without an `Idempotency-Key`. Default false: such requests run unprotected. */
  required?: boolean;
  /** How long a claim holds the key before another request may take it over. Default 30 000 ms. */
  leaseMs?: number;
  /** How long a completed key is kept; the coordinator's namespace default (24 h) when omitted. */
  retentionSeconds?: number;
  /** Who is calling (a user or API-key id): the same key from another caller is refused, never replayed to it. */
  identify?: (request: IncomingRequestLike) => string | undefined;
  /** Response statuses that release the claim instead of storing the response. Default 429 and 503. */
  transientStatuses?: number[];
  /** Thrown errors that happened before any side effect: the claim is released. Marked errors always are ({@link markNoSideEffect}). */
  releaseOn?: (error: unknown) => boolean;
  /** Without the coordinator: `reject` answers 503 (default); `proceed` runs the handler unprotected. */
  whenUnavailable?: 'reject' | 'proceed';
  /** Largest response stored; a larger one is sent but not stored, and its claim released. Default 256 KiB. */
  maxResponseBytes?: number;
  /** Per-request headers not stored nor replayed. Default `x-request-id`. */
  skipHeaders?: string[];
  /** Told when a response could not be stored or a claim released (lease lost, too large, coordinator down). */
  onError?: (error: unknown, key: string) => void;
  /**
   * A key an earlier attempt held and abandoned (the claim says `recovered`: that attempt may have
   * partly run). `reject` (default): the handler is not run again; the request is answered 409
   * `in_flight` and the key stays held, so every retry is refused alike until the key expires.
   * `run`: the handler runs, and reconciles first ({@link idempotencyOf} says `recovered`).
   *
   * @example
   * expressIdempotency(client, { onRecovered: 'run' }); // the handlers check idempotencyOf(req).recovered
   */
  onRecovered?: 'reject' | 'run';
}

/** What the middleware knows about the current request's key; see {@link idempotencyOf}. */
export interface IdempotencyContext {
  key: string;
  /** An earlier attempt with this key held it and vanished: it may have partly run. */
  recovered: boolean;
}

/** A claim the current request holds: settled once, with the response or by a release. */
export interface HeldClaim extends IdempotencyContext {
  /** The handler failed before any side effect: release instead of storing. */
  markNoSideEffect(): void;
  /** Stores the response, or releases the claim if it is transient; never throws. */
  settle(response: StoredResponse): Promise<void>;
  /** Releases the claim (the response cannot be stored), telling `onError` why; never throws. */
  release(reason: unknown): Promise<void>;
}

/** What to do with a request: run it unprotected, answer without running it, or run it holding the claim. */
export type IdempotencyDecision =
  | { action: 'pass' }
  | { action: 'respond'; response: StoredResponse; replayed: boolean }
  | { action: 'run'; claim: HeldClaim };

/** Headers that belong to one connection or one moment, never replayed. */
const NEVER_STORED = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
  'content-length',
  'date',
  IDEMPOTENT_REPLAYED_HEADER,
]);
const MARKER = 'noSideEffect';
const RECOVERED_REFUSAL =
  'an earlier attempt with this Idempotency-Key stopped part-way and may have partly run: it is not run again';
/** First wait before a failed completion is asked again; each further wait doubles. */
const COMPLETION_RETRY_MS = 50;
const claims = new WeakMap<object, HeldClaim>();

/**
 * Marks an error as thrown before any side effect, so the idempotency middleware releases the
 * claim instead of storing the error: the client's retry runs the handler again.
 *
 * @example
 * if (!(await inventory.reserve(sku))) throw markNoSideEffect(new ServiceUnavailableException('inventory is down'));
 */
export function markNoSideEffect<E extends object>(error: E): E {
  Object.defineProperty(error, MARKER, { value: true, enumerable: false });
  return error;
}

/**
 * True for an error marked by {@link markNoSideEffect} (or carrying `noSideEffect: true`).
 *
 * @example
 * if (isNoSideEffect(error)) logger.debug('released the claim');
 */
export function isNoSideEffect(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[MARKER] === true;
}

/**
 * The idempotency key of the current request and whether it was recovered, when the middleware holds a claim for it.
 *
 * @example
 * const idempotency = idempotencyOf(request);
 * if (idempotency?.recovered) await reconcile(order); // an earlier attempt may have partly run
 */
export function idempotencyOf(request: object): IdempotencyContext | undefined {
  const claim = claims.get(request);
  return claim ? { key: claim.key, recovered: claim.recovered } : undefined;
}

/**
 * Says, from inside a handler, that the request failed before any side effect: its claim is
 * released instead of its response stored.
 *
 * @example
 * if (!stock) { releaseIdempotencyClaim(request); return reply.code(409).send({ error: 'out of stock' }); }
 */
export function releaseIdempotencyClaim(request: object): void {
  claims.get(request)?.markNoSideEffect();
}

/**
 * The framework-neutral core of the server-side middleware: reads `Idempotency-Key`, fingerprints
 * the request, claims the key, and settles the claim with the response (or releases it).
 */
export class IdempotencyEngine {
  private readonly transient: Set<number>;
  private readonly skipped: Set<string>;

  constructor(
    private readonly client: CoordinatorClient,
    private readonly options: IdempotencyOptions = {},
  ) {
    this.transient = new Set(options.transientStatuses ?? [429, 503]);
    this.skipped = new Set((options.skipHeaders ?? ['x-request-id']).map((name) => name.toLowerCase()));
  }

  get maxResponseBytes(): number {
    return this.options.maxResponseBytes ?? MAX_STORED_RESPONSE_BYTES;
  }

  /** The claim the request holds, if any. */
  claimOf(request: object): HeldClaim | undefined {
    return claims.get(request);
  }

  /** True when a thrown error should release the claim. */
  releases(error: unknown): boolean {
    return isNoSideEffect(error) || this.options.releaseOn?.(error) === true;
  }

  /** Headers as stored: lowercase names, without per-connection and skipped ones. */
  storedHeaders(headers: Record<string, unknown>): Record<string, string | string[]> {
    const stored: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (value === undefined || NEVER_STORED.has(lower) || this.skipped.has(lower)) continue;
      stored[lower] = Array.isArray(value) ? value.map(String) : String(value);
    }
    return stored;
  }

  async decide(request: IncomingRequestLike, bind: object = request): Promise<IdempotencyDecision> {
    const header = request.headers[IDEMPOTENCY_KEY_HEADER];
    if (header === undefined || header === '') {
      return this.options.required
        ? refusal(400, 'validation_failed', 'an Idempotency-Key header is required on this route')
        : { action: 'pass' };
    }
    const key = Array.isArray(header) ? undefined : header;
    if (key === undefined || !IDEMPOTENCY_KEY_PATTERN.test(key)) {
      return refusal(400, 'validation_failed', `the Idempotency-Key must match ${IDEMPOTENCY_KEY_PATTERN.source}`);
    }
    const fingerprint = requestFingerprint({
      method: request.method ?? 'GET',
      url: request.originalUrl ?? request.url ?? '',
      body: request.body,
      identity: this.options.identify?.(request),
    });
    let claim;
    try {
      // The claim carries a claimId: asked again after no answer, it resumes as this request's own claim.
      claim = await this.client.claimIdempotencyKey(key, {
        fingerprint,
        leaseMs: this.options.leaseMs ?? DEFAULT_IDEMPOTENCY_LEASE_MS,
        retentionSeconds: this.options.retentionSeconds,
      });
    } catch (error) {
      if (!isCoordinatorUnavailableError(error)) throw error;
      this.options.onError?.(error, key);
      if (this.options.whenUnavailable === 'proceed') return { action: 'pass' };
      // Overload is said as overload: every coordinator instance asked shed the claim.
      const code = error.overloaded ? 'overloaded' : 'store_unavailable';
      return refusal(
        503,
        code,
        'idempotency keys cannot be checked right now',
        Math.max(1000, error.retryAfterMs ?? 0),
      );
    }
    switch (claim.state) {
      case 'completed':
        return { action: 'respond', response: claim.response, replayed: true };
      case 'in_flight':
        return refusal(409, 'in_flight', 'a request with this Idempotency-Key is in flight', claim.retryAfterMs);
      case 'mismatch':
        return refusal(422, 'fingerprint_mismatch', 'this Idempotency-Key was used for a different request');
      case 'claimed': {
        if (claim.recovered && (this.options.onRecovered ?? 'reject') === 'reject') {
          return refusal(409, 'in_flight', RECOVERED_REFUSAL, this.options.leaseMs ?? DEFAULT_IDEMPOTENCY_LEASE_MS);
        }
        const leaseEndsAt = Date.now() + (this.options.leaseMs ?? DEFAULT_IDEMPOTENCY_LEASE_MS);
        const held = this.hold(key, claim.token, claim.recovered, leaseEndsAt);
        claims.set(bind, held);
        return { action: 'run', claim: held };
      }
    }
  }

  private hold(key: string, token: string, recovered: boolean, leaseEndsAt: number): HeldClaim {
    let noSideEffect = false;
    let settled = false;
    const once = async (action: () => Promise<void>) => {
      if (settled) return;
      settled = true;
      try {
        await action();
      } catch (error) {
        this.options.onError?.(error, key);
      }
    };
    const release = () => this.client.releaseIdempotencyKey(key, token);
    return {
      key,
      recovered,
      markNoSideEffect: () => {
        noSideEffect = true;
      },
      settle: (response) =>
        once(() =>
          noSideEffect || this.transient.has(response.status)
            ? release()
            : this.complete(key, token, response, leaseEndsAt),
        ),
      release: (reason) =>
        once(async () => {
          this.options.onError?.(reason, key);
          await release();
        }),
    };
  }

  /**
   * Stores the response. When the coordinator cannot be reached, the caller is not kept waiting
   * (the work is done and its response is sent), but the completion is asked again in the
   * background, with the same token, until the lease ends: a coordinator back within the lease
   * stores it, so a duplicate gets the replay instead of running the handler a second time.
   */
  private async complete(key: string, token: string, response: StoredResponse, leaseEndsAt: number): Promise<void> {
    try {
      await this.client.completeIdempotencyKey(key, token, response);
    } catch (error) {
      if (isCoordinatorUnavailableError(error) && Date.now() < leaseEndsAt) {
        void this.completeLater(key, token, response, leaseEndsAt);
      }
      throw error;
    }
  }

  private async completeLater(key: string, token: string, response: StoredResponse, leaseEndsAt: number): Promise<void> {
    for (let waitMs = COMPLETION_RETRY_MS; Date.now() + waitMs < leaseEndsAt; waitMs *= 2) {
      await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
      try {
        await this.client.completeIdempotencyKey(key, token, response);
        return;
      } catch (error) {
        if (!isCoordinatorUnavailableError(error)) {
          this.options.onError?.(error, key);
          return;
        }
      }
    }
    this.options.onError?.(new Error('the response could not be stored before the lease ended'), key);
  }
}

function refusal(status: number, code: ErrorBody['code'], message: string, retryAfterMs?: number): IdempotencyDecision {
  const body: ErrorBody & Record<string, unknown> = { statusCode: status, code, message };
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (status === 400) body.details = [{ field: 'Idempotency-Key', message }];
  if (code === 'in_flight') body.state = 'in_flight';
  if (retryAfterMs !== undefined) {
    body.retryAfterMs = retryAfterMs;
    headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  }
  return {
    action: 'respond',
    replayed: false,
    response: { status, headers, body: JSON.stringify(body), bodyEncoding: 'utf8' },
  };
}

/** The body of a stored response as bytes. */
export function storedBody(response: StoredResponse): Buffer {
  return Buffer.from(response.body, response.bodyEncoding === 'base64' ? 'base64' : 'utf8');
}

/** The headers to send with a replay (or a refusal): the stored ones, plus `Idempotent-Replayed`. */
export function replayHeaders(response: StoredResponse, replayed: boolean): Record<string, string | string[]> {
  return replayed ? { ...response.headers, [IDEMPOTENT_REPLAYED_HEADER]: 'true' } : response.headers;
}
