/** The audit log keeps about this many entries. */
export const AUDIT_ENTRIES_KEPT = 10_000;

export interface AuditRecord {
  actor: string;
  action: string;
  namespace: string;
  target: string;
  reason: string | null;
  /** How long the forced state an action set lasts (a trip or force-close with a duration); null otherwise. */
  durationMs?: number | null;
  /** When that forced state ends (epoch ms); null otherwise. */
  endsAt?: number | null;
}

export interface AuditEntry extends AuditRecord {
  /** When it was recorded (epoch ms, the store's clock). */
  at: number;
  durationMs: number | null;
  endsAt: number | null;
}

/** The log of operators' actions (trips, resets, policy changes, redrives). */
export interface AuditStore {
  /** Appends an operator's action to the audit log; returns its time. */
  appendAudit(record: AuditRecord): Promise<number>;

  /** The latest `limit` audit entries (of one namespace when given), oldest first. */
  readAudit(query: { namespace?: string; limit: number }): Promise<AuditEntry[]>;
}
