import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '@sluice/protocol';
import { isStoreUnavailableError } from '@sluice/store';
import { ApiError, storeUnavailable } from '../common/api-error';
import { StoreFailureLog } from './store-failure-log';

const CODES_BY_STATUS: Record<number, ErrorCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'not_found',
  409: 'in_flight',
  412: 'precondition_failed',
  413: 'payload_too_large',
  414: 'validation_failed',
  415: 'validation_failed',
};

/** Lines from here go through the request's own logger, so they carry its reqId. */
const CONTEXT = { context: 'HttpError' };

/** Each server's log of store failures (a process may run more than one app, as tests do). */
const storeFailureLogs = new WeakMap<FastifyRequest['server'], StoreFailureLog>();

/** Errors raised before a DTO is reached name the part of the request at fault. */
const FIELDS_BY_STATUS: Record<number, string> = { 400: 'body', 413: 'body', 414: 'path', 415: 'content-type' };

/** Turns every error into the API's error body; an unknown error is a 500 that hides its cause. */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  catch(error: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    sendError(error, http.getRequest<FastifyRequest>(), http.getResponse<FastifyReply>());
  }
}

/** Sends the API error body for `error`, including errors Fastify raised while reading the request. */
export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const apiError = toApiError(error, request);
  for (const [name, value] of Object.entries(apiError.headers)) reply.header(name, value);
  void reply.status(apiError.getStatus()).send(apiError.body());
}

function toApiError(error: unknown, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  if (isStoreUnavailableError(error)) {
    storeFailureLogOf(request).failed(
      request.log,
      `store unavailable on ${request.method} ${request.url}: ${error.message}`,
    );
    return storeUnavailable();
  }
  const status = statusOf(error);
  if (status !== undefined && status < 500) {
    const message = messageOf(error, status);
    const field = (error as { code?: unknown }).code === 'FST_ERR_BAD_URL' ? 'path' : FIELDS_BY_STATUS[status];
    return new ApiError(
      status,
      CODES_BY_STATUS[status] ?? 'validation_failed',
      message,
      field ? [{ field, message }] : undefined,
    );
  }
  request.log.error(
    { ...CONTEXT, stack: (error as Error)?.stack },
    `unexpected error on ${request.method} ${request.url}`,
  );
  return new ApiError(500, 'internal_error', 'internal error');
}

function storeFailureLogOf(request: FastifyRequest): StoreFailureLog {
  let log = storeFailureLogs.get(request.server);
  if (log === undefined) {
    log = new StoreFailureLog(request.server.log, CONTEXT);
    storeFailureLogs.set(request.server, log);
  }
  return log;
}

/** The status of a Nest HttpException or of a Fastify error (body parsing, body limit). */
function statusOf(error: unknown): number | undefined {
  if (error instanceof HttpException) return error.getStatus();
  const statusCode = (error as { statusCode?: unknown })?.statusCode;
  return typeof statusCode === 'number' ? statusCode : undefined;
}

function messageOf(error: unknown, status: number): string {
  if (status === 413) return 'the request body is too large';
  if (status === 404 || status === 405) return 'no such route';
  const message = error instanceof HttpException ? error.message : (error as Error)?.message;
  return message || 'bad request';
}
