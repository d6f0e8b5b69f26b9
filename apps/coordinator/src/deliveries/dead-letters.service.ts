import { Inject, Injectable } from '@nestjs/common';
import type { DeadLetter, DeadLetterPage } from '@sluice/protocol';
import type { QueueRef, Store, StoredDeadLetter } from '@sluice/store';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../auth/token-registry';
import { notFound } from '../common/api-error';
import { STORE } from '../store/store.provider';
import { DeadLetterDepth } from './dead-letter-depth.service';
import { DEAD_LETTERS } from './delivery-limits';

const DEFAULT_PAGE_SIZE = 100;

/** The operators' view of a queue's dead letters: list, redrive and purge. */
@Injectable()
export class DeadLettersService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly depth: DeadLetterDepth,
    private readonly audit: AuditService,
  ) {}

  async list(ref: QueueRef, page: { limit?: number; cursor?: string }): Promise<DeadLetterPage> {
    const stored = await this.store.listDeadLetters(ref, {
      limit: page.limit ?? DEFAULT_PAGE_SIZE,
      after: page.cursor,
      retention: DEAD_LETTERS,
    });
    this.depth.observe(ref, stored.depth);
    return { items: stored.items.map(toDeadLetter), next: stored.next };
  }

  /** Hands the entry back for delivery again: it leaves the store and its attempt count restarts. */
  async redrive(ref: QueueRef, id: string, actor: Principal): Promise<DeadLetter> {
    const entry = await this.store.redriveDeadLetter(ref, id);
    if (!entry) throw unknownDeadLetter(ref, id);
    await this.audit.record(actor, {
      action: 'dead_letter.redrive',
      namespace: ref.namespace,
      target: `${ref.queue}/${id}`,
    });
    return toDeadLetter(entry);
  }

  async purge(ref: QueueRef, id: string, actor: Principal): Promise<void> {
    if (!(await this.store.purgeDeadLetter(ref, id))) throw unknownDeadLetter(ref, id);
    await this.audit.record(actor, {
      action: 'dead_letter.purge',
      namespace: ref.namespace,
      target: `${ref.queue}/${id}`,
    });
  }
}

function toDeadLetter(entry: StoredDeadLetter): DeadLetter {
  return {
    id: entry.messageId,
    messageId: entry.messageId,
    payload: entry.payload === null ? null : JSON.parse(entry.payload),
    error: entry.error,
    attempts: entry.attempts,
    deadLetteredAt: entry.deadLetteredAt,
    firstAttemptAt: entry.firstAttemptAt,
  };
}

const unknownDeadLetter = (ref: QueueRef, id: string) =>
  notFound(`no dead letter "${id}" in queue "${ref.queue}" of namespace "${ref.namespace}"`);
