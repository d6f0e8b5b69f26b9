import { Inject, Injectable } from '@nestjs/common';
import type { DeadLetter, DeadLetterPage, QueueItem, QueueList } from '@sluice/protocol';
import type { QueueRef, Store, StoredDeadLetter } from '@sluice/store';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../auth/token-registry';
import { notFound } from '../common/api-error';
import { STORE } from '../store/store.provider';
import { DeadLetterDepth } from './dead-letter-depth.service';
import { readInBatches } from '../admin/read-in-batches';
import { DEAD_LETTERS, DEAD_LETTER_QUEUES } from './delivery-limits';

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

  /**
   * A page of the namespace's queues that hold dead letters, by name, each with its count: the
   * queues listed as parking within the retention, counted READ_BATCH at a time, the emptied ones
   * left out.
   */
  async queues(namespace: string, page: { limit?: number; cursor?: string }): Promise<QueueList> {
    const listed = await this.store.listDeadLetterQueues(namespace, {
      retentionMs: DEAD_LETTER_QUEUES.retentionMs,
      limit: page.limit ?? DEFAULT_PAGE_SIZE,
      ...(page.cursor ? { after: page.cursor } : {}),
    });
    const counted = await readInBatches(listed.items, async ({ queue, lastDeadLetteredAt }): Promise<QueueItem> => ({
      queue,
      deadLetters: await this.store.countDeadLetters({ namespace, queue }, DEAD_LETTERS),
      lastDeadLetteredAt,
    }));
    return { items: counted.filter((item) => item.deadLetters > 0), next: listed.next };
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
