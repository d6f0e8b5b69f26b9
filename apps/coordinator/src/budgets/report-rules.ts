import type { ErrorDetail, ReportRequest } from '@sluice/protocol';

/** Rules across the fields of a report that per-field validation cannot express. */
export function reportProblems(report: ReportRequest): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  report.deps.forEach((entry, index) => {
    const at = `deps.${index}`;
    if (entry.slow > entry.successes + entry.failures) {
      problems.push({ field: `${at}.slow`, message: 'slow calls must not outnumber successes plus failures' });
    }
    const { latency } = entry;
    if (latency) {
      if (latency.counts.length !== latency.boundsMs.length + 1) {
        problems.push({ field: `${at}.latency.counts`, message: 'must have one more entry than boundsMs' });
      }
      if (latency.boundsMs.some((bound, i) => i > 0 && bound <= latency.boundsMs[i - 1])) {
        problems.push({ field: `${at}.latency.boundsMs`, message: 'must be strictly increasing' });
      }
    }
  });
  return problems;
}
