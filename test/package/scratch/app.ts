// A Nest app on the packed SDK: POST /orders is an @Idempotent() route, its idempotency keys held
// by the coordinator at SLUICE_URL; Sluice is injected by its class. Listens on PORT.
import 'reflect-metadata';
import { Body, Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { CoordinatorClient, Sluice } from '@sluice/client';
import { IdempotencyModule, Idempotent, SluiceModule } from '@sluice/client/nest';

const coordinatorUrl = process.env.SLUICE_URL ?? 'http://127.0.0.1:8080';
let created = 0;

@Controller('orders')
class OrdersController {
  constructor(private readonly sluice: Sluice) {}

  @Post()
  @Idempotent({ required: true })
  create(@Body() order: { sku: string }) {
    created += 1;
    return { order: created, sku: order.sku, sluice: this.sluice instanceof Sluice };
  }
}

@Module({
  imports: [
    SluiceModule.forRoot({ baseUrls: [coordinatorUrl], namespace: 'packed', logger: false }),
    IdempotencyModule.forRoot({ client: new CoordinatorClient({ baseUrl: coordinatorUrl, namespace: 'packed' }) }),
  ],
  controllers: [OrdersController],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), { logger: ['error'] });
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT), '127.0.0.1');
  console.log('listening');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
