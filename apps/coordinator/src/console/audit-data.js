// GET /admin/v1/audit, and how one entry reads.

import { get, path } from './api.js';
import { h } from './dom.js';
import { dateTime, forcedFor } from './format.js';

/** @typedef {import('@sluice/protocol').AuditEntry} AuditEntry */
/** @typedef {import('@sluice/protocol').AuditLog} AuditLog */

/**
 * The latest entries, newest first (the API answers oldest first).
 * @param {{ namespace?: string, limit?: number }} [query]
 * @returns {Promise<AuditEntry[]>}
 */
export async function readAudit({ namespace, limit = 200 } = {}) {
  const query = new URLSearchParams({ limit: String(limit) });
  if (namespace) query.set('ns', namespace);
  /** @type {AuditLog} */
  const { items } = await get(`${path('admin', 'v1', 'audit')}?${query}`);
  return items.reverse();
}

/**
 * The newest entry of `action` on `target` in `namespace`.
 * @param {string} namespace
 * @param {string} action
 * @param {string} target
 */
export async function latestEntry(namespace, action, target) {
  const entries = await readAudit({ namespace, limit: 50 });
  return entries.find((entry) => entry.action === action && entry.target === target);
}

/**
 * One entry as a sentence, for the notice after an action.
 * @param {AuditEntry} entry
 */
export function auditLine(entry) {
  return h(
    'span',
    { class: 'audit-line' },
    `Audit: ${dateTime(entry.at)} · ${entry.actor} · ${entry.action} · ${entry.namespace}/${entry.target}`,
    entry.reason ? ` · “${entry.reason}”` : '',
    forcedFor(entry) ? ` · ${forcedFor(entry)}` : '',
  );
}
