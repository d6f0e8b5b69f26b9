import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import type { BreakerEvent, ErrorBody } from '@sluice/protocol';
import { readEventStream } from '@sluice/client/transport/event-stream';
import { refusal } from '../admin-client';
import { CliError } from '../cli-error';
import { segment, withContext } from '../context';
import { instant, text, type OutputFormat } from '../output';

/** `sluice watch <ns>`: breaker changes of a namespace as they happen, from its event stream. */
export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description('print breaker changes live (first every breaker\u2019s state), until Ctrl-C')
    .argument('<ns>', 'the namespace')
    .option('--deps <names>', 'only these dependencies, comma-separated')
    .action(
      withContext(async ({ client, output }, ns: string, options: { deps?: string }) => {
        const stop = new AbortController();
        const abort = () => stop.abort();
        process.once('SIGINT', abort);
        process.once('SIGTERM', abort);
        const path = `v1/${segment(ns)}/events`;
        const response = await client.fetch(client.urlOf(path, { deps: options.deps }), {
          headers: { accept: 'text/event-stream', ...client.authorization() },
          signal: stop.signal,
        });
        if (!response.ok || !response.body) {
          throw refusal(
            'GET',
            path,
            response,
            (await response.json().catch(() => undefined)) as Partial<ErrorBody>,
            client.connection,
          );
        }
        process.stderr.write(`watching the breakers of ${ns} (Ctrl-C to stop)\n`);
        const stream = Readable.fromWeb(response.body as ReadableStream<Uint8Array>);
        try {
          await readEventStream(
            stream,
            (frame) => {
              if (frame.event === 'breaker' && frame.data) print(output, ns, JSON.parse(frame.data) as BreakerEvent);
            },
            () => undefined,
          );
        } catch (error) {
          if (!stop.signal.aborted) throw new CliError(`the event stream failed: ${(error as Error).message}`);
        }
        if (!stop.signal.aborted) throw new CliError('the coordinator ended the event stream');
      }),
    );
}

/** One line per event: JSON for scripts, or time, dependency, state, until, reason. */
function print(output: OutputFormat, namespace: string, event: BreakerEvent): void {
  const line =
    output === 'json'
      ? JSON.stringify({ namespace, ...event })
      : [
          // A breaker that never changed has no `since`: the line carries the time it was read.
          instant(event.since ?? Date.now()),
          `${namespace}/${event.dep}`,
          event.state,
          event.openUntil === null ? '' : `until ${instant(event.openUntil)}`,
          event.reason === null ? '' : `reason: ${text(event.reason)}`,
        ]
          .filter(Boolean)
          .join('  ');
  process.stdout.write(`${line}\n`);
}
