import { startCoordinatorProcess } from '../support/coordinator-process';
import { findFreePort } from '../support/ports';
import { waitUntil } from '../support/time';

jest.setTimeout(120_000);

const isJsonObject = (line: string): boolean => {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
};

/** The built coordinator's output up to and after its first request, with SLUICE_LOG_FORMAT as given. */
async function bootLines(format?: string): Promise<string[]> {
  const env: NodeJS.ProcessEnv = { SLUICE_LOG_LEVEL: 'debug', ...(format ? { SLUICE_LOG_FORMAT: format } : {}) };
  const coordinator = await startCoordinatorProcess(await findFreePort(), env);
  try {
    await fetch(`${coordinator.url}/no/such/route`);
    await waitUntil(
      () => /listening on http:\/\/127\.0\.0\.1:\d+/.test(coordinator.output()),
      10_000,
      () => `never said where it listens: ${coordinator.output()}`,
    );
  } finally {
    await coordinator.stop();
  }
  return coordinator.output().split('\n').filter(Boolean);
}

// Production logs are JSON, one object a line, for collectors; `npm run start:dev` sets
// SLUICE_LOG_FORMAT=pretty, and a person reads one line per entry.
describe('SLUICE_LOG_FORMAT', () => {
  it('unset: every line is a JSON object', async () => {
    const lines = await bootLines();
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.filter((line) => !isJsonObject(line))).toEqual([]);
  });

  it('pretty: readable lines with a UTC time, the level and the context, and no JSON lines', async () => {
    const lines = await bootLines('pretty');
    expect(lines.filter(isJsonObject)).toEqual([]);
    expect(lines).toContainEqual(
      expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO {2}\[Sluice\] listening on http:\/\/127\.0\.0\.1:\d+$/),
    );
    // Fastify's request lines (debug) too, with their request id.
    expect(lines).toContainEqual(expect.stringMatching(/^\S+Z INFO {2}request completed reqId=\S+ res=\{"statusCode":404\}/));
    expect(lines.every((line) => /^(\S+Z (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) | {4})/.test(line))).toBe(true);
  });
});
