import type { LoggerService } from '@nestjs/common';
import pino, { type Logger } from 'pino';
import type { LogFormat, LogLevel } from '../config/config';
import { prettyDestination } from './pretty';

/**
 * The process's one pino instance: Fastify's (its request loggers are children of it, carrying
 * `reqId`) and, through {@link NestPinoLogger}, Nest's. One JSON object per line on stdout, or with
 * format `pretty` one readable line (pretty.ts).
 */
export function createLogger(level: LogLevel, format: LogFormat = 'json'): Logger {
  return format === 'pretty' ? pino({ level }, prettyDestination()) : pino({ level });
}

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/**
 * Nest's LoggerService on the pino instance: `context` as a field, the stack of an error line as
 * `stack`. Its lines belong to no request: code that logs about the request it serves writes to that
 * request's logger (`request.log`, carrying `reqId`). No AsyncLocalStorage carries a request's
 * logger here: on Node 20 it hooks every promise of every request (10–15 % of a decision's CPU).
 */
/** Nest's line-per-module and line-per-route boot details: debug, so a boot says a few things at info. */
const BOOT_DETAIL = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

export class NestPinoLogger implements LoggerService {
  constructor(private readonly root: Logger) {}

  log(message: unknown, ...rest: unknown[]): void {
    const context = rest[rest.length - 1];
    this.write(typeof context === 'string' && BOOT_DETAIL.has(context) ? 'debug' : 'info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  private write(level: Level, message: unknown, rest: unknown[]): void {
    if (!this.root.isLevelEnabled(level)) return;
    const params = [...rest];
    const context = typeof params[params.length - 1] === 'string' ? (params.pop() as string) : undefined;
    const fields: Record<string, unknown> = { context };
    if ((level === 'error' || level === 'fatal') && typeof params[0] === 'string') fields.stack = params[0];
    if (message instanceof Error) {
      fields.err = message;
      this.root[level](fields, message.message);
    } else {
      this.root[level](
        fields,
        typeof message === 'object' && message !== null ? JSON.stringify(message) : String(message),
      );
    }
  }
}
