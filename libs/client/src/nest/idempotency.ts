/** `@Idempotent()` for NestJS routes (Fastify or Express platform), part of `@sluice/client/nest`. */
import {
  Global,
  Inject,
  Injectable,
  Module,
  SetMetadata,
  UseInterceptors,
  applyDecorators,
  type CallHandler,
  type DynamicModule,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { ServerResponse } from 'node:http';
import { catchError, from, of, switchMap, throwError, type Observable } from 'rxjs';
import type { CoordinatorClient, IdempotencyOptions, IncomingRequestLike, StoredResponse } from '@sluice/client';
import { captureResponse } from '../idempotency/capture';
import { IdempotencyEngine, replayHeaders, storedBody } from '../idempotency/engine';

export const IDEMPOTENCY_CONFIG = Symbol('sluice:idempotency-config');
const IDEMPOTENT_ROUTE = 'sluice:idempotent';

export interface IdempotencyModuleConfig extends IdempotencyOptions {
  client: CoordinatorClient;
}

/**
 * Provides the coordinator client and the defaults of every `@Idempotent()` route.
 *
 * @example
 * @Module({ imports: [IdempotencyModule.forRoot({ client: new CoordinatorClient({ baseUrl, namespace: 'shop' }) })] })
 * export class AppModule {}
 */
@Global()
@Module({})
export class IdempotencyModule {
  static forRoot(config: IdempotencyModuleConfig): DynamicModule {
    return {
      module: IdempotencyModule,
      providers: [{ provide: IDEMPOTENCY_CONFIG, useValue: config }, IdempotencyInterceptor],
      exports: [IDEMPOTENCY_CONFIG, IdempotencyInterceptor],
    };
  }
}

/**
 * Makes a route idempotent: a request with an `Idempotency-Key` runs once; its retries get the
 * same response (status, headers, body, byte for byte) with `Idempotent-Replayed: true`, a 409
 * while it runs, a 422 when the key comes with another request. Options override the module's.
 *
 * @example
 * @Post('orders')
 * @Idempotent({ required: true })
 * create(@Body() order: OrderDto) { return this.orders.create(order); }
 */
export const Idempotent = (options: IdempotencyOptions = {}): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(IDEMPOTENT_ROUTE, options), UseInterceptors(IdempotencyInterceptor));

/** The interceptor behind {@link Idempotent}. */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly engines = new Map<object, IdempotencyEngine>();

  constructor(
    @Inject(IDEMPOTENCY_CONFIG) private readonly config: IdempotencyModuleConfig,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const engine = this.engineFor(context);
    const http = context.switchToHttp();
    const request = http.getRequest<IncomingRequestLike & object>();
    const response = http.getResponse<{ raw?: ServerResponse } & object>();
    return from(engine.decide(request)).pipe(
      switchMap((decision) => {
        if (decision.action === 'pass') return next.handle();
        if (decision.action === 'respond') return of(toWebResponse(decision.response, decision.replayed));
        captureResponse(response.raw ?? (response as ServerResponse), decision.claim, engine);
        return next.handle().pipe(
          catchError((error: unknown) => {
            if (engine.releases(error)) decision.claim.markNoSideEffect();
            return throwError(() => error);
          }),
        );
      }),
    );
  }

  private engineFor(context: ExecutionContext): IdempotencyEngine {
    const handler = context.getHandler();
    let engine = this.engines.get(handler);
    if (!engine) {
      const { client, ...defaults } = this.config;
      const route = this.reflector.getAllAndOverride<IdempotencyOptions | undefined>(IDEMPOTENT_ROUTE, [
        handler,
        context.getClass(),
      ]);
      engine = new IdempotencyEngine(client, { ...defaults, ...route });
      this.engines.set(handler, engine);
    }
    return engine;
  }
}

/** Statuses whose response has no body (the web Response refuses one). */
const NO_BODY = new Set([204, 205, 304]);

/** A stored response as a web Response, which Nest sends as it is, whatever the platform. */
function toWebResponse(stored: StoredResponse, replayed: boolean): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(replayHeaders(stored, replayed))) {
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const body = storedBody(stored);
  if (NO_BODY.has(stored.status)) return new Response(null, { status: stored.status, headers });
  headers.set('content-length', String(body.length));
  return new Response(body, { status: stored.status, headers });
}
