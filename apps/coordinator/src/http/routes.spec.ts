import 'reflect-metadata';
import { Controller, Get, type Type } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { checkRouteKinds } from './route-kinds';
import { AdminRoute, ClientRoute } from './routes';

const DOC = { operationId: 'thing', summary: 'A thing', responses: [{ status: 200, description: 'It.' }] };

@Controller('v1/:ns/things')
class KindedController {
  @Get()
  @ClientRoute(DOC)
  list(): string {
    return 'ok';
  }
}

@Controller('admin/v1/things')
class UnkindedController {
  @Get()
  @AdminRoute(DOC)
  list(): string {
    return 'ok';
  }

  @Get('forgotten')
  forgotten(): string {
    return 'ok';
  }
}

async function appOf(controller: Type): Promise<NestFastifyApplication> {
  const module = await Test.createTestingModule({ controllers: [controller] }).compile();
  return module.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
}

describe('route kinds', () => {
  it('boots when every route has a kind', async () => {
    const app = await appOf(KindedController);
    expect(() => checkRouteKinds(app)).not.toThrow();
    await app.close();
  });

  it('refuses to boot with a route that has none, naming it', async () => {
    const app = await appOf(UnkindedController);
    expect(() => checkRouteKinds(app)).toThrow(/UnkindedController\.forgotten$/);
    await app.close();
  });

  it('refuses a serialized route whose 200 answer has no response component', () => {
    expect(() => ClientRoute({ ...DOC, serialized: true })).toThrow(
      'thing is serialized: its 200 response needs a response component as its schema',
    );
  });
});
