import { AUDIT_ENTRIES_KEPT, type AuditEntry, type AuditStore } from '../roles/audit';
import type { MemoryContext } from './context';

/** The audit log in memory: the latest AUDIT_ENTRIES_KEPT entries, oldest first. */
export function memoryAudit(context: MemoryContext): AuditStore {
  const entries: AuditEntry[] = [];
  return {
    async appendAudit(record) {
      const at = context.now();
      entries.push({ ...record, durationMs: record.durationMs ?? null, endsAt: record.endsAt ?? null, at });
      if (entries.length > AUDIT_ENTRIES_KEPT) entries.splice(0, entries.length - AUDIT_ENTRIES_KEPT);
      return at;
    },

    async readAudit(query) {
      const matching = entries.filter((entry) => !query.namespace || entry.namespace === query.namespace);
      return matching.slice(Math.max(matching.length - query.limit, 0)).map((entry) => ({ ...entry }));
    },
  };
}
