import type { LoggerService } from '@nestjs/common';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from '../config/config';

/** The logger of the request being served, for lines written through Nest's `Logger` while serving it. */
const requestLogs = new AsyncLocalStorage<FastifyBaseLogger>();

/**
 * The process's one pino instance: Fastify's (its request loggers are children of it, carrying
 * `reqId`) and, through {@link NestPinoLogger}, Nest's. One JSON object per line on stdout.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return destination ? pino({ level }, destination) : pino({ level });
}

/**
 * Runs `next` (a Fastify hook's `done`) with the request's logger as the current one, so what Nest
 * code logs from there on (guards, pipes, handlers, services, filters) carries the request's id.
 */
export function withRequestLog(request: FastifyRequest, next: () => void): void {
  requestLogs.run(request.log, next);
}

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/**
 * Nest's LoggerService on the pino instance: `context` as a field, the stack of an error line as
 * `stack`, and the current request's logger (its `reqId`) when the line is written while serving one.
 */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly root: Logger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
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
    // Request loggers are children of the root one, at its level.
    if (!this.root.isLevelEnabled(level)) return;
    const logger = requestLogs.getStore() ?? this.root;
    const params = [...rest];
    const context = typeof params[params.length - 1] === 'string' ? (params.pop() as string) : undefined;
    const fields: Record<string, unknown> = { context };
    if ((level === 'error' || level === 'fatal') && typeof params[0] === 'string') fields.stack = params[0];
    if (message instanceof Error) {
      fields.err = message;
      logger[level](fields, message.message);
    } else {
      logger[level](
        fields,
        typeof message === 'object' && message !== null ? JSON.stringify(message) : String(message),
      );
    }
  }
}
