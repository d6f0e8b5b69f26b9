/** The document's groups of operations (one client class each in most SDK generators), in order. */
export const TAGS = {
  dependencies: {
    name: 'Dependencies',
    description:
      'Retry budgets, circuit breakers, admission and concurrency leases, batched outcome reports and breaker ' +
      'events of the dependencies a namespace calls.',
  },
  limits: { name: 'Limits', description: 'Named rate limits, shared by the fleet.' },
  idempotency: {
    name: 'Idempotency',
    description: 'Idempotency keys: claim, complete with the response to replay, release, read.',
  },
  deliveries: { name: 'Deliveries', description: 'Failed delivery attempts of queue messages, and acknowledgements.' },
  breakersAdmin: { name: 'Admin: breakers', description: 'Operators\u2019 view and control of breakers and budgets.' },
  policiesAdmin: {
    name: 'Admin: policies',
    description:
      'Policy documents of a namespace: its default, and one per dependency, named limit and queue. Versioned by ' +
      '`ETag`; writes take `If-Match` / `If-None-Match: *` and `?reason=` for the audit log.',
  },
  deadLettersAdmin: { name: 'Admin: dead letters', description: 'Parked messages of a queue: list, redrive, purge.' },
  audit: { name: 'Admin: audit', description: 'Who changed breakers, policies and dead letters, and why.' },
  operations: { name: 'Operations', description: 'Health probes and Prometheus metrics; no token needed.' },
} as const;
