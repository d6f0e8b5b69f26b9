import type { Command } from 'commander';
import { AdminClient } from './admin-client';
import { usageError } from './cli-error';
import type { OutputFormat } from './output';

/** The options every command takes (`sluice --help`). */
export interface GlobalOptions {
  url: string;
  token?: string;
  output: OutputFormat;
}

/** What a command's action works with: the coordinator's client and the output format. */
export interface CommandContext {
  client: AdminClient;
  output: OutputFormat;
}

type Handler<A extends unknown[]> = (context: CommandContext, ...args: A) => Promise<void>;

/**
 * A commander action that gets a CommandContext first, then the command's arguments and options
 * (commander passes the command itself last).
 */
export function withContext<A extends unknown[]>(handler: Handler<A>): (...args: unknown[]) => Promise<void> {
  return (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const options = command.optsWithGlobals<GlobalOptions>();
    const url = coordinatorUrl(options.url, command.getOptionValueSourceWithGlobals('url'));
    const context = { client: new AdminClient({ url, token: options.token }), output: options.output };
    return handler(context, ...(args.slice(0, -1) as A));
  };
}

/** One path segment, escaped. */
export const segment = (name: string): string => encodeURIComponent(name);

/**
 * The coordinator's base URL, checked before anything is sent: a bad one is bad usage (exit 2),
 * said with where it came from.
 */
export function coordinatorUrl(url: string, source: string | undefined): string {
  const from = source === 'env' ? ' (from SLUICE_URL)' : '';
  if (!/^https?:\/\//i.test(url)) {
    throw usageError(`--url must start with http:// or https://, e.g. http://127.0.0.1:8080; got "${url}"${from}`);
  }
  try {
    new URL(url);
  } catch {
    throw usageError(`--url is not a valid URL: "${url}"${from}`);
  }
  return url;
}
