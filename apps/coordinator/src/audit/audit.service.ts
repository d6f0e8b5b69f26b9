import { Inject, Injectable } from '@nestjs/common';
import type { AuditEntry } from '@sluice/protocol';
import type { Store } from '@sluice/store';
import type { Principal } from '../auth/token-registry';
import { ApiError } from '../common/api-error';
import { MetricsService } from '../metrics/metrics.service';
import { STORE } from '../store/store.provider';

/** An operator's action as the audit log keeps it. */
export interface AdminAction {
  action: string;
  namespace: string;
  target: string;
  reason?: string | null;
  /** The duration of the forced state a trip or force-close set, and when it ends. */
  durationMs?: number | null;
  endsAt?: number | null;
}

/** Records every admin action (actor, time, target, reason) and reads the log back. */
@Injectable()
export class AuditService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly metrics: MetricsService,
  ) {}

  async record(principal: Principal, action: AdminAction): Promise<void> {
    await this.store.appendAudit({
      actor: principal.id,
      action: action.action,
      namespace: action.namespace,
      target: action.target,
      reason: action.reason ?? null,
      durationMs: action.durationMs ?? null,
      endsAt: action.endsAt ?? null,
    });
    this.metrics.adminActions.inc({ action: action.action });
  }

  /**
   * The log as `principal` may see it: one of its namespaces (the guard checked `namespace`), or
   * every namespace only for a token that covers them all.
   */
  async readAs(principal: Principal, query: { namespace?: string; limit: number }): Promise<AuditEntry[]> {
    if (query.namespace === undefined && !principal.namespaces.includes('*')) {
      throw new ApiError(403, 'forbidden', 'this token may read the audit log of its own namespaces only: pass ?ns=');
    }
    const entries = await this.store.readAudit(query);
    return entries.map(({ actor, action, namespace, target, reason, at, durationMs, endsAt }) => ({
      actor,
      action,
      namespace,
      target,
      reason,
      at,
      durationMs,
      endsAt,
    }));
  }
}
