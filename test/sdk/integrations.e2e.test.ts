import 'reflect-metadata';
import { Controller, Get, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import Fastify from 'fastify';
import { Sluice, currentContext, sluiceFastify } from '@sluice/client';
import { SluiceModule } from '@sluice/client/nest';
import { findFreePort } from '../support/ports';

@Injectable()
class Settings {
  readonly sluice = { baseUrls: ['http://127.0.0.1:1'], namespace: 'shop', logger: false as const };
}

@Module({ providers: [Settings], exports: [Settings] })
class SettingsModule {}

@Controller('context')
class ContextController {
  constructor(readonly sluice: Sluice) {}

  @Get()
  read() {
    return { context: currentContext() ?? null, injected: this.sluice instanceof Sluice };
  }
}

describe('integrations', () => {
  it('SluiceModule.forRootAsync provides the client from a factory and closes it on shutdown', async () => {
    @Module({
      imports: [
        SluiceModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (settings: Settings) => settings.sluice,
        }),
      ],
      controllers: [ContextController],
    })
    class App {}
    const app = await NestFactory.create(App, new FastifyAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    const response = await fetch(`${await app.getUrl()}/context`, {
      headers: { 'sluice-attempt': '2', 'sluice-deadline-ms': '750' },
    });
    const body = (await response.json()) as { context: { attempt: number; deadlineAt: number }; injected: boolean };
    expect(body.injected).toBe(true);
    expect(body.context.attempt).toBe(2);
    expect(body.context.deadlineAt).toBeGreaterThan(Date.now());
    const sluice = app.get(Sluice);
    await app.close();
    expect(() => sluice.dependency('after-close')).toThrow('closed');
  });

  it('the Fastify plugin is not encapsulated: routes of nested plugins get the context too', async () => {
    const fastify = Fastify();
    await fastify.register(sluiceFastify);
    await fastify.register(async (child) => {
      child.get('/ctx', async () => currentContext() ?? null);
    });
    const port = await findFreePort();
    await fastify.listen({ port, host: '127.0.0.1' });
    const response = await fetch(`http://127.0.0.1:${port}/ctx`, { headers: { 'sluice-attempt': '3' } });
    expect(await response.json()).toMatchObject({ attempt: 3 });
    await fastify.close();
  });
});
