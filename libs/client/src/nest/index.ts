/**
 * `@sluice/client/nest`: the NestJS module, and `@Idempotent()` routes (NestJS is an optional peer
 * dependency, needed only here).
 * @packageDocumentation
 */
import {
  Global,
  Inject,
  Injectable,
  Module,
  type CallHandler,
  type DynamicModule,
  type ExecutionContext,
  type InjectionToken,
  type ModuleMetadata,
  type NestInterceptor,
  type OnApplicationShutdown,
  type Provider,
} from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { Observable } from 'rxjs';
// The package's public entry, not its files: the packed `@sluice/client/nest` then shares the
// main entry's classes (Nest injects `Sluice` by its class) and types.
import {
  NO_RETRY_HEADER,
  Sluice,
  contextFromHeaders,
  runWithContext,
  type IncomingHeaders,
  type SluiceOptions,
} from '@sluice/client';

/**
 * The injection token of the module's options.
 * @example
 * constructor(@Inject(SLUICE_OPTIONS) options: SluiceOptions) {}
 */
export const SLUICE_OPTIONS = Symbol('SLUICE_OPTIONS');

/** A request as Nest's Express and Fastify adapters pass it. */
interface RequestLike {
  headers: IncomingHeaders;
}
/** A response or Fastify reply. */
interface ResponseLike {
  sent?: boolean;
  headersSent?: boolean;
  raw?: unknown;
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
}

/**
 * Puts the Sluice request context (incoming `sluice-deadline-ms` and `sluice-attempt`) around
 * every HTTP handler, on Express and Fastify alike. {@link SluiceModule} registers it globally
 * unless `contextInterceptor: false`.
 * @example
 * @UseInterceptors(SluiceContextInterceptor)
 * @Controller('orders')
 * export class OrdersController {}
 */
@Injectable()
export class SluiceContextInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<RequestLike>();
    const response = http.getResponse<ResponseLike>();
    const pushback = (reason: string) => {
      if (response.raw !== undefined && typeof response.header === 'function') {
        if (!response.sent) response.header(NO_RETRY_HEADER, reason);
      } else if (typeof response.setHeader === 'function' && !response.headersSent) {
        response.setHeader(NO_RETRY_HEADER, reason);
      }
    };
    const requestContext = contextFromHeaders(request.headers ?? {}, { pushback });
    return new Observable((subscriber) => runWithContext(requestContext, () => next.handle().subscribe(subscriber)));
  }
}

/** Closes the client when the application shuts down. */
@Injectable()
class SluiceLifecycle implements OnApplicationShutdown {
  constructor(@Inject(Sluice) private readonly sluice: Sluice) {}

  async onApplicationShutdown(): Promise<void> {
    await this.sluice.close();
  }
}

/**
 * Options of {@link SluiceModule.forRootAsync}.
 * @example
 * SluiceModule.forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (config) => config.get('sluice') });
 */
export interface SluiceModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory: (...args: never[]) => SluiceOptions | Promise<SluiceOptions>;
  inject?: InjectionToken[];
  /** Register {@link SluiceContextInterceptor} for every route (default true). */
  contextInterceptor?: boolean;
}

/**
 * The NestJS module: provides the {@link Sluice} client (inject it by its class), puts the request
 * context around every handler, and closes the client on shutdown. Global.
 * @example
 * @Module({ imports: [SluiceModule.forRoot({ baseUrls: ['http://sluice:8080'], namespace: 'shop' })] })
 * export class AppModule {}
 *
 * @Injectable()
 * export class PaymentsClient {
 *   private readonly payments = this.sluice.dependency('payments-api');
 *   constructor(private readonly sluice: Sluice) {
 *     sluice.onGiveUp(({ reason }) => this.logger.warn(reason));
 *   }
 *   charge(order: Order) {
 *     return this.payments.fetch(`http://payments/charges`, { method: 'POST', body: JSON.stringify(order), idempotencyKey: order.id });
 *   }
 * }
 */
@Global()
@Module({})
export class SluiceModule {
  /**
   * With options known up front.
   * @example
   * SluiceModule.forRoot({ baseUrls: [process.env.SLUICE_URL!], token: process.env.SLUICE_TOKEN, namespace: 'shop' })
   */
  static forRoot(options: SluiceOptions & { contextInterceptor?: boolean }): DynamicModule {
    const { contextInterceptor, ...sluiceOptions } = options;
    return SluiceModule.build([{ provide: SLUICE_OPTIONS, useValue: sluiceOptions }], [], contextInterceptor ?? true);
  }

  /**
   * With options from a factory (e.g. a config service).
   * @example
   * SluiceModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ baseUrls: [config.get('SLUICE_URL')], namespace: 'shop' }),
   * })
   */
  static forRootAsync(options: SluiceModuleAsyncOptions): DynamicModule {
    return SluiceModule.build(
      [{ provide: SLUICE_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] }],
      options.imports ?? [],
      options.contextInterceptor ?? true,
    );
  }

  private static build(
    optionsProviders: Provider[],
    imports: NonNullable<ModuleMetadata['imports']>,
    contextInterceptor: boolean,
  ): DynamicModule {
    const providers: Provider[] = [
      ...optionsProviders,
      { provide: Sluice, useFactory: (options: SluiceOptions) => new Sluice(options), inject: [SLUICE_OPTIONS] },
      SluiceLifecycle,
      SluiceContextInterceptor,
    ];
    if (contextInterceptor) providers.push({ provide: APP_INTERCEPTOR, useExisting: SluiceContextInterceptor });
    return {
      module: SluiceModule,
      imports,
      providers,
      exports: [Sluice, SluiceContextInterceptor, SLUICE_OPTIONS],
    };
  }
}

export { Sluice };
export * from './idempotency';
