import 'reflect-metadata';
import {
  BadGatewayException,
  Body,
  Controller,
  Header,
  HttpCode,
  Inject,
  InternalServerErrorException,
  Module,
  Post,
  Req,
  Res,
  type DynamicModule,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply } from 'fastify';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { CoordinatorClient, idempotencyOf, markNoSideEffect, type IdempotencyOptions } from '@sluice/client';
import { Idempotent, IdempotencyModule } from '@sluice/client/nest';

/**
 * An example service with idempotent POST routes, as a user of the SDK would write it. Every
 * route counts its executions in Redis (`<counterPrefix>:<route>`), so a test can tell how often
 * a handler body really ran.
 */
export interface ExampleAppOptions {
  coordinatorUrl: string;
  namespace: string;
  redisUrl: string;
  counterPrefix: string;
  /** What the `/orders` and `/hang` handlers wait on before they answer (the test holds them in flight). */
  gate?: (route: 'orders' | 'hang', run: number) => Promise<void>;
  onError?: IdempotencyOptions['onError'];
  /** How long the app's coordinator client waits for a claim or completion, ms (its default: 2000). */
  coordinatorTimeoutMs?: number;
}

const DEPS = Symbol('example-deps');
interface Deps {
  redis: Redis;
  options: ExampleAppOptions;
}

@Controller()
class OrdersController {
  constructor(@Inject(DEPS) private readonly deps: Deps) {}

  private count(route: string): Promise<number> {
    return this.deps.redis.incr(`${this.deps.options.counterPrefix}:${route}`);
  }

  /** The side effect of the storm test: an order, counted once per real execution. */
  @Post('orders')
  @Idempotent()
  async create(@Body() body: { sku: string; qty: number }, @Res({ passthrough: true }) reply: FastifyReply) {
    const count = await this.count('orders');
    await this.deps.options.gate?.('orders', count);
    reply.header('x-order-nonce', randomBytes(6).toString('hex'));
    return { orderId: `ord_${count}`, sku: body.sku, qty: body.qty, createdAt: Date.now() };
  }

  @Post('required')
  @Idempotent({ required: true })
  async required() {
    return { count: await this.count('required') };
  }

  /** Binary body, a custom content type, multiple set-cookie values and a fresh nonce each run. */
  @Post('files')
  @HttpCode(200)
  @Header('content-type', 'image/x-example')
  @Idempotent()
  async file(@Res({ passthrough: true }) reply: FastifyReply): Promise<Buffer> {
    await this.count('files');
    reply.header('x-file-nonce', randomBytes(8).toString('hex'));
    reply.header('set-cookie', ['session=abc; Path=/', 'theme=dark']);
    return randomBytes(2048);
  }

  /** Short retention: the key is new again after a second. */
  @Post('short')
  @Idempotent({ retentionSeconds: 1 })
  async short() {
    return { run: await this.count('short') };
  }

  /** 503 on the first run (transient: the claim is released), 201 after. */
  @Post('flaky')
  @Idempotent()
  async flaky(@Res({ passthrough: true }) reply: FastifyReply) {
    const run = await this.count('flaky');
    if (run === 1) reply.status(503);
    return { run };
  }

  /** Fails before any side effect on the first run (released), succeeds after. */
  @Post('guarded')
  @Idempotent()
  async guarded() {
    const run = await this.count('guarded');
    if (run === 1) throw markNoSideEffect(new BadGatewayException('the upstream refused'));
    return { run };
  }

  /** Fails after its side effect: the 500 is stored and replayed, the body runs once. */
  @Post('broken')
  @Idempotent()
  async broken() {
    await this.count('broken');
    throw new InternalServerErrorException('the order was half made');
  }

  /** Waits on the test's gate: its holder "dies" while the key is in flight. */
  @Post('hang')
  @Idempotent({ leaseMs: 1000 })
  async hang(@Req() request: object) {
    const run = await this.count('hang');
    await this.deps.options.gate?.('hang', run);
    return { run, recovered: idempotencyOf(request)?.recovered };
  }
}

@Module({})
class ExampleModule {
  static register(deps: Deps, client: CoordinatorClient): DynamicModule {
    return {
      module: ExampleModule,
      // The handler reconciles a recovered key (it reads idempotencyOf), so it may run again.
      imports: [IdempotencyModule.forRoot({ client, onError: deps.options.onError, onRecovered: 'run' })],
      controllers: [OrdersController],
      providers: [{ provide: DEPS, useValue: deps }],
    };
  }
}

export interface RunningExampleApp {
  url: string;
  close(): Promise<void>;
}

/** Starts one instance of the example app on a free loopback port. */
export async function startExampleApp(options: ExampleAppOptions): Promise<RunningExampleApp> {
  const redis = new Redis(options.redisUrl, { protocol: 2 });
  const client = new CoordinatorClient({
    baseUrl: options.coordinatorUrl,
    namespace: options.namespace,
    timeoutMs: options.coordinatorTimeoutMs,
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    ExampleModule.register({ redis, options }, client),
    new FastifyAdapter(),
    { logger: false },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await app.close();
      redis.disconnect();
    },
  };
}
