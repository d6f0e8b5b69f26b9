import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { map, type Observable } from 'rxjs';
import { validationFailed } from '../common/api-error';
import { VersionedPolicy } from './policy-target';

/**
 * The HTTP side of policy documents: a PUT must carry a document (an empty body is refused rather
 * than stored as "all defaults"), and a VersionedPolicy is sent as its document with `ETag: "<version>"`.
 */
@Injectable()
export class PolicyDocumentInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    if (request.method === 'PUT' && request.body === undefined) {
      throw validationFailed([{ field: 'body', message: 'a policy document (a JSON object) is required' }]);
    }
    const reply = http.getResponse<FastifyReply>();
    return next.handle().pipe(
      map((result: unknown) => {
        if (!(result instanceof VersionedPolicy)) return result;
        reply.header('etag', result.etag);
        return result.document;
      }),
    );
  }
}
