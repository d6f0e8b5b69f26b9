import type {
  DeadLetter,
  DeadLetterPage,
  DeliveryAttemptRequest,
  DeliveryAttemptResponse,
  ErrorBody,
  IdempotencyClaimRequest,
  IdempotencyClaimResponse,
  IdempotencyKeyView,
  StoredResponse,
  TakeDecision,
  TakeRequest,
} from '@sluice/protocol';
import { CoordinatorUnavailableError, LeaseLostError, SluiceHttpError } from './errors';
import { MAX_REASKS, ReAsks, newRequestId, unanswered } from './transport/re-ask';

export interface CoordinatorClientOptions {
  /**
   * The coordinator's base URL, e.g. `http://sluice:8080`, or several instances of it: a call that
   * gets no answer from one goes on to the next.
   */
  baseUrl: string | string[];
  /** The namespace every call is about. */
  namespace: string;
  /** A bearer token (`client`, or `admin` for the dead-letter calls); none when authentication is off. */
  token?: string;
  /**
   * Longest one call may take, its re-asks included, before it fails as
   * {@link CoordinatorUnavailableError}. Default 2000 ms. A call that carries an id (a claim, a
   * take, a delivery attempt with its delivery count) waits at most half of it for one exchange,
   * so that a second one, with the same id, fits after a timeout.
   */
  timeoutMs?: number;
  /** The fetch to use; the global one by default. */
  fetch?: typeof fetch;
}

/** What a claim found: the caller holds the key, or its response is stored, or another holds it, or it was used for another request. */
export type ClaimOutcome =
  IdempotencyClaimResponse | { state: 'in_flight'; retryAfterMs: number } | { state: 'mismatch' };

const DEFAULT_TIMEOUT_MS = 2000;

/**
 * A small typed client of the coordinator's idempotency, named limit and delivery endpoints (docs/api.md,
 * idempotency keys, delivery attempts, the admin dead letters). Decisions are values; failures
 * are errors: {@link CoordinatorUnavailableError}, {@link LeaseLostError}, {@link SluiceHttpError}.
 *
 * State-changing calls carry a caller-chosen id: a claim its `claimId`, a take its `requestId`
 * (fresh ones unless given), a delivery attempt its `attempt` when the delivery count is known.
 * Such a call that gets no answer (a 503, a 502 or 504, a lost connection, a timeout) is asked
 * again with the same id while its time allows, on the next base URL where there is one, and the
 * coordinator answers the first outcome. A 503 `overloaded` changed nothing: any call goes on to
 * another instance, never back to the one that shed it.
 *
 * @example
 * const client = new CoordinatorClient({ baseUrl: 'http://sluice:8080', namespace: 'shop', token: process.env.SLUICE_TOKEN });
 * const claim = await client.claimIdempotencyKey('order-42', { fingerprint: 'sha256:…' });
 */
export class CoordinatorClient {
  readonly namespace: string;
  private readonly baseUrls: string[];
  /** The instance the next call goes to first. */
  private current = 0;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: CoordinatorClientOptions) {
    this.namespace = options.namespace;
    const baseUrls = Array.isArray(options.baseUrl) ? options.baseUrl : [options.baseUrl];
    if (baseUrls.length === 0) throw new TypeError('baseUrl needs at least one coordinator URL');
    this.baseUrls = baseUrls.map((url) => url.replace(/\/+$/, ''));
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /**
   * Claims an idempotency key: `claimed` (with the fencing token; `recovered` when an expired
   * holder was taken over), `completed` (with the stored response), `in_flight` or `mismatch`.
   * The claim carries a `claimId` (a fresh one unless given): asked again after no answer, the
   * coordinator answers `claimed` with the same token (`resumed: true`), the caller's own claim.
   *
   * @example
   * const claim = await client.claimIdempotencyKey(key, { fingerprint, leaseMs: 10_000 });
   * if (claim.state === 'completed') return replay(claim.response);
   */
  async claimIdempotencyKey(
    key: string,
    request: IdempotencyClaimRequest,
    signal?: AbortSignal,
  ): Promise<ClaimOutcome> {
    const body: IdempotencyClaimRequest =
      request.claimId === undefined ? { ...request, claimId: newRequestId() } : request;
    const response = await this.call('POST', this.idempotencyPath(key, '/claim'), body, signal, true);
    if (response.status === 409 && response.body?.code === 'in_flight') {
      return { state: 'in_flight', retryAfterMs: Number(response.body.retryAfterMs ?? 1000) };
    }
    if (response.status === 422 && response.body?.code === 'fingerprint_mismatch') return { state: 'mismatch' };
    return this.expectOk(response) as ClaimOutcome;
  }

  /**
   * Stores the response of a claimed key. Throws {@link LeaseLostError} when the token no longer holds it.
   * Completing again with the same token keeps the first response, so a completion that got no
   * answer is asked again.
   *
   * @example
   * await client.completeIdempotencyKey(key, claim.token, { status: 201, headers: {}, body: '{"id":1}', bodyEncoding: 'utf8' });
   */
  async completeIdempotencyKey(
    key: string,
    token: string,
    response: StoredResponse,
    signal?: AbortSignal,
  ): Promise<void> {
    this.expectOk(await this.call('PUT', this.idempotencyPath(key), { token, response }, signal, true));
  }

  /**
   * Releases a claim whose work did not happen, so the next claim runs it again.
   *
   * @example
   * await client.releaseIdempotencyKey(key, claim.token);
   */
  async releaseIdempotencyKey(key: string, token: string, signal?: AbortSignal): Promise<void> {
    const path = `${this.idempotencyPath(key)}?token=${encodeURIComponent(token)}`;
    this.expectOk(await this.call('DELETE', path, undefined, signal));
  }

  /**
   * The key's state and times, or undefined when it is unknown (never used, released or expired).
   *
   * @example
   * const view = await client.readIdempotencyKey(key); // { state: 'completed', createdAt, expiresAt, … }
   */
  async readIdempotencyKey(key: string, signal?: AbortSignal): Promise<IdempotencyKeyView | undefined> {
    const response = await this.call('GET', this.idempotencyPath(key), undefined, signal);
    if (response.status === 404) return undefined;
    return this.expectOk(response) as IdempotencyKeyView;
  }

  /**
   * Records one failed delivery of a message; `deadLetter: true` means it is parked: do not deliver
   * it again. With `attempt` (the broker's delivery count, 1 for the first delivery) recording it
   * again changes nothing, so a call that got no answer is asked again; without it, it is not.
   *
   * @example
   * const { deadLetter, delayMs } = await client.recordDeliveryAttempt('orders', { messageId, error: String(error), payload, attempt: receiveCount });
   */
  async recordDeliveryAttempt(
    queue: string,
    request: DeliveryAttemptRequest,
    signal?: AbortSignal,
  ): Promise<DeliveryAttemptResponse> {
    const path = this.queuePath(queue, '/attempts');
    return this.expectOk(
      await this.call('POST', path, request, signal, request.attempt !== undefined),
    ) as DeliveryAttemptResponse;
  }

  /**
   * Takes from a named rate limit (`PUT /admin/v1/{ns}/policies/limits/{limit}` defines it), for
   * one `key`: a decision, granted or not. The take carries a `requestId` (a fresh one unless
   * given): asked again after no answer, it answers the first decision without taking twice. An
   * undefined limit is a {@link SluiceHttpError} 404.
   *
   * @example
   * const take = await client.takeLimit('exports', { key: `user-${userId}` });
   * if (!take.allow) return reply.code(429).header('retry-after', Math.ceil(take.retryAfterMs / 1000)).send();
   */
  async takeLimit(limit: string, request: TakeRequest, signal?: AbortSignal): Promise<TakeDecision> {
    const body: TakeRequest = request.requestId === undefined ? { ...request, requestId: newRequestId() } : request;
    const path = `/v1/${this.namespace}/limits/${encodeURIComponent(limit)}/take`;
    return this.expectOk(await this.call('POST', path, body, signal, true)) as TakeDecision;
  }

  /**
   * The message is done: its attempt count is forgotten.
   *
   * @example
   * await client.ackDelivery('orders', messageId);
   */
  async ackDelivery(queue: string, messageId: string, signal?: AbortSignal): Promise<void> {
    this.expectOk(await this.call('POST', this.queuePath(queue, '/acks'), { messageId }, signal));
  }

  /**
   * A page of the queue's dead letters, oldest first (admin token).
   *
   * @example
   * for (let page = await client.listDeadLetters('orders'); ; page = await client.listDeadLetters('orders', { cursor: page.next! })) {
   *   page.items.forEach(inspect);
   *   if (!page.next) break;
   * }
   */
  async listDeadLetters(
    queue: string,
    page: { limit?: number; cursor?: string } = {},
    signal?: AbortSignal,
  ): Promise<DeadLetterPage> {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.cursor !== undefined) query.set('cursor', page.cursor);
    const suffix = query.size > 0 ? `?${query}` : '';
    return this.expectOk(
      await this.call('GET', this.deadLetterPath(queue, suffix), undefined, signal),
    ) as DeadLetterPage;
  }

  /**
   * Takes a dead letter out to deliver it again (its attempt count restarts); returns the entry (admin token).
   *
   * @example
   * const entry = await client.redriveDeadLetter('orders', 'msg-42');
   * await broker.publish('orders', entry.payload);
   */
  async redriveDeadLetter(queue: string, id: string, signal?: AbortSignal): Promise<DeadLetter> {
    const path = this.deadLetterPath(queue, `/${encodeURIComponent(id)}/redrive`);
    return this.expectOk(await this.call('POST', path, undefined, signal)) as DeadLetter;
  }

  /**
   * Deletes a dead letter for good (admin token).
   *
   * @example
   * await client.purgeDeadLetter('orders', 'msg-42');
   */
  async purgeDeadLetter(queue: string, id: string, signal?: AbortSignal): Promise<void> {
    const path = this.deadLetterPath(queue, `/${encodeURIComponent(id)}`);
    this.expectOk(await this.call('DELETE', path, undefined, signal));
  }

  private idempotencyPath(key: string, suffix = ''): string {
    return `/v1/${this.namespace}/idempotency/${encodeURIComponent(key)}${suffix}`;
  }

  private queuePath(queue: string, suffix: string): string {
    return `/v1/${this.namespace}/queues/${encodeURIComponent(queue)}${suffix}`;
  }

  private deadLetterPath(queue: string, suffix: string): string {
    return `/admin/v1/${this.namespace}/queues/${encodeURIComponent(queue)}/dead-letters${suffix}`;
  }

  /**
   * One call: its first exchange, then while its time allows the re-asks {@link ReAsks} permits,
   * each on the next base URL. `repeatable`: the body carries a caller-chosen id.
   */
  private async call(
    method: string,
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
    repeatable = false,
  ): Promise<{ status: number; body: (Partial<ErrorBody> & Record<string, unknown>) | undefined }> {
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const endsAt = Date.now() + timeoutMs;
    const reAsks = new ReAsks(this.baseUrls.length, repeatable);
    let index = this.current;
    for (let exchange = 0; ; exchange++) {
      const leftMs = endsAt - Date.now();
      // Room for a second exchange with the same id after a timeout.
      const waitMs = repeatable && exchange < MAX_REASKS ? Math.min(leftMs, Math.ceil(timeoutMs / 2)) : leftMs;
      try {
        return await this.exchange(this.baseUrls[index], method, path, body, signal, Math.max(1, waitMs));
      } catch (error) {
        if (signal?.aborted || !(error instanceof CoordinatorUnavailableError)) throw error;
        if (unanswered(error) && this.current === index) this.current = (index + 1) % this.baseUrls.length;
        const next = reAsks.next(index, error, endsAt - Date.now() >= 1);
        if (next === undefined) throw reAsks.error ?? error;
        index = next;
      }
    }
  }

  /** One request to one instance, answered within `waitMs`; no answer (or a 502, 503, 504) is a CoordinatorUnavailableError. */
  private async exchange(
    baseUrl: string,
    method: string,
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
    waitMs: number,
  ): Promise<{ status: number; body: (Partial<ErrorBody> & Record<string, unknown>) | undefined }> {
    const timeout = AbortSignal.timeout(waitMs);
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    let response: Response;
    let text: string;
    try {
      response = await this.fetch(`${baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await response.text();
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new CoordinatorUnavailableError(`${method} ${path}: ${(error as Error).message}`, { cause: error });
    }
    const parsed = text ? (parseJson(text) as (Partial<ErrorBody> & Record<string, unknown>) | undefined) : undefined;
    if (response.status === 503 || response.status === 502 || response.status === 504) {
      const retryAfter = Number(response.headers.get('retry-after'));
      const code = typeof parsed?.code === 'string' ? parsed.code : undefined;
      throw new CoordinatorUnavailableError(
        `${method} ${path}: the coordinator answered ${response.status}${code ? ` ${code}` : ''}`,
        {
          status: response.status,
          code,
          retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
        },
      );
    }
    return { status: response.status, body: parsed };
  }

  private expectOk(response: {
    status: number;
    body: (Partial<ErrorBody> & Record<string, unknown>) | undefined;
  }): unknown {
    if (response.status < 400) return response.body;
    if (response.status === 409 && response.body?.code === 'lease_lost') throw new LeaseLostError(response.body);
    throw new SluiceHttpError(response.status, response.body);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
