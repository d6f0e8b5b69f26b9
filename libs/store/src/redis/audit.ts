import type { SluiceKeys } from '../keys';
import { AUDIT_ENTRIES_KEPT, type AuditEntry, type AuditStore } from '../roles/audit';
import type { ScriptRunner } from './script-runner';

/** Values per entry in read_audit-1.lua's reply. */
const AUDIT_ENTRY_VALUES = 8;

/** The audit log, a capped stream: append_audit-1.lua and read_audit-1.lua. */
export function redisAudit(scripts: ScriptRunner, keys: SluiceKeys): AuditStore {
  return {
    async appendAudit(record) {
      const at = await scripts.run(
        'append_audit',
        keys.audit(),
        AUDIT_ENTRIES_KEPT,
        record.actor,
        record.action,
        record.namespace,
        record.target,
        record.reason ?? '',
        record.durationMs ?? '',
        record.endsAt ?? '',
      );
      return Number(at);
    },

    async readAudit(query) {
      const reply = await scripts.run('read_audit', keys.audit(), query.namespace ?? '', query.limit);
      const entries: AuditEntry[] = [];
      for (let i = 0; i + AUDIT_ENTRY_VALUES - 1 < reply.length; i += AUDIT_ENTRY_VALUES) {
        entries.push({
          at: Number(reply[i]),
          actor: String(reply[i + 1]),
          action: String(reply[i + 2]),
          namespace: String(reply[i + 3]),
          target: String(reply[i + 4]),
          reason: reply[i + 5] === '' ? null : String(reply[i + 5]),
          durationMs: reply[i + 6] === '' ? null : Number(reply[i + 6]),
          endsAt: reply[i + 7] === '' ? null : Number(reply[i + 7]),
        });
      }
      return entries;
    },
  };
}
