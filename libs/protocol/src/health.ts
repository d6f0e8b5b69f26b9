/** GET /, GET /health/live and GET /health/ready. */

export interface Health {
  status: 'ok';
}

export const READINESS_STATUSES = ['ok', 'unavailable'] as const;
export type ReadinessStatus = (typeof READINESS_STATUSES)[number];

/** The store behind the service: embedded (one process) or Redis (a server or a Cluster). */
export const STORE_KINDS = ['memory', 'redis'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export interface Readiness {
  status: ReadinessStatus;
  store: StoreKind;
}

/** GET / (asked for JSON): where the console and the API description are, as paths on this host. */
export interface ServiceIndex {
  service: 'sluice';
  message: string;
  console: string;
  docs: string;
  openapi: string;
}
