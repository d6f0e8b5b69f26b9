import 'reflect-metadata';
import {
  Body,
  type CanActivate,
  Controller,
  HttpCode,
  Param,
  Post,
  Res,
  UseGuards,
  type INestApplication,
  type Type,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { IsInt, IsOptional, IsString, Matches, Max } from 'class-validator';
import type { FastifyReply } from 'fastify';
import request from 'supertest';
import { AuthGuard } from '../auth/auth.guard';
import { TokenRegistry } from '../auth/token-registry';
import { ApiError } from '../common/api-error';
import { installDirectRoutes, ServedDirectly } from './direct-routes';
import { HttpErrorFilter } from './error-writer';
import { CheckedBySchema, createValidationPipe } from './validation/pipe';

// A served-directly route must answer exactly what Nest's pipeline answers for the same route, so
// each case below is asked of a twin pair: `direct` (built handler) and `nest` (Nest's pipeline).

const SECRET = 'direct-routes-secret-1';

@CheckedBySchema()
class ThingParams {
  ns!: string;
  thing!: string;
}

/** Not checked by schema: the pipe (class-validator) has the last word, on both twins. */
class ThingBody {
  @IsInt()
  @Max(10)
  count!: number;

  @IsOptional()
  @IsString()
  @Matches(/^[a-z]+$/)
  note?: string;
}

/** Checked by schema (no rule here): the pipe hands it on as it is, so the method runs in the request's own turn. */
@CheckedBySchema()
class CheckedThingBody {
  count!: number;
  note?: string;
}

function answer(params: ThingParams, body: ThingBody, reply?: FastifyReply): Promise<object> {
  if (body.note === 'thrown') throw new ApiError(409, 'in_flight', 'thrown before any promise');
  return answerLater(params, body, reply);
}

async function answerLater(params: ThingParams, body: ThingBody, reply?: FastifyReply): Promise<object> {
  await Promise.resolve();
  if (body.note === 'conflict') throw new ApiError(409, 'in_flight', 'busy', undefined, { 'retry-after': '1' });
  if (body.note === 'crash') throw new Error('a bug');
  reply?.header('x-thing', params.thing);
  return { ns: params.ns, thing: params.thing, count: body.count, isDto: body instanceof ThingBody };
}

@Controller('v1/:ns/things/:thing')
class ThingsController {
  @Post('direct')
  @HttpCode(200)
  @ServedDirectly()
  direct(
    @Param() params: ThingParams,
    @Body() body: ThingBody,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<object> {
    return answer(params, body, reply);
  }

  @Post('direct-checked')
  @HttpCode(200)
  @ServedDirectly()
  directChecked(@Param() params: ThingParams, @Body() body: CheckedThingBody): Promise<object> {
    return answer(params, body as ThingBody);
  }

  @Post('nest-checked')
  @HttpCode(200)
  nestChecked(@Param() params: ThingParams, @Body() body: CheckedThingBody): Promise<object> {
    return answer(params, body as ThingBody);
  }

  @Post('nest')
  @HttpCode(200)
  nest(
    @Param() params: ThingParams,
    @Body() body: ThingBody,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<object> {
    return answer(params, body, reply);
  }
}

async function appWith(
  controller: Type,
  tokens = [{ id: 'shop', secret: SECRET, role: 'client' as const, namespaces: ['shop'] }],
) {
  const moduleRef = await Test.createTestingModule({
    controllers: [controller],
    providers: [
      { provide: TokenRegistry, useValue: new TokenRegistry(tokens) },
      AuthGuard,
      { provide: APP_GUARD, useExisting: AuthGuard },
      { provide: APP_PIPE, useFactory: createValidationPipe },
      { provide: APP_FILTER, useClass: HttpErrorFilter },
    ],
  }).compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  return app;
}

describe('routes served directly', () => {
  let app: INestApplication;
  beforeAll(async () => {
    const nestApp = await appWith(ThingsController);
    installDirectRoutes(nestApp, { validators: new Map(), pipe: createValidationPipe() });
    await nestApp.init();
    await nestApp.getHttpAdapter().getInstance().ready();
    app = nestApp;
  });
  afterAll(() => app.close());

  const ask = (
    route: 'direct' | 'nest' | 'direct-checked' | 'nest-checked',
    path: string,
    body: unknown,
    token: string | null = SECRET,
  ) => {
    const req = request(app.getHttpServer()).post(`/v1/${path}/${route}`);
    if (token) req.set('authorization', `Bearer ${token}`);
    return req.send(body as object);
  };

  const cases: [string, string, unknown, string | null][] = [
    ['an answer', 'shop/things/a', { count: 3 }, SECRET],
    ['no token', 'shop/things/a', { count: 3 }, null],
    ['an unknown token', 'shop/things/a', { count: 3 }, 'not-a-known-token-at-all'],
    ['another namespace', 'other/things/a', { count: 3 }, SECRET],
    ["the pipe's 400", 'shop/things/a', { count: 11 }, SECRET],
    ['a field the DTO lacks', 'shop/things/a', { count: 1, extra: true }, SECRET],
    ["a service's ApiError", 'shop/things/a', { count: 1, note: 'conflict' }, SECRET],
    ['an unexpected error', 'shop/things/a', { count: 1, note: 'crash' }, SECRET],
    ['an empty route parameter', 'shop/things/', { count: 1 }, SECRET],
  ];

  it.each(cases)('%s: the same status, headers and body as through Nest', async (_name, path, body, token) => {
    const [direct, nest] = [await ask('direct', path, body, token), await ask('nest', path, body, token)];
    expect({ status: direct.status, body: direct.body }).toEqual({ status: nest.status, body: nest.body });
    for (const header of ['x-thing', 'retry-after', 'www-authenticate', 'content-type']) {
      expect([header, direct.headers[header]]).toEqual([header, nest.headers[header]]);
    }
  });

  it.each([
    ['an answer', { count: 2 }],
    ['an error thrown before any promise', { count: 2, note: 'thrown' }],
    ['a rejection', { count: 2, note: 'conflict' }],
  ])('a DTO the pipe passes as it is, %s: the same as through Nest', async (_name, body) => {
    const [direct, nest] = [
      await ask('direct-checked', 'shop/things/a', body),
      await ask('nest-checked', 'shop/things/a', body),
    ];
    expect({ status: direct.status, body: direct.body }).toEqual({ status: nest.status, body: nest.body });
    expect(direct.status).not.toBe(500);
  });

  it('hands the pipe its DTO class (class-transformer ran) and answers with the route status', async () => {
    const res = await ask('direct', 'shop/things/a', { count: 3 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ns: 'shop', thing: 'a', count: 3, isDto: true });
    expect(res.headers['x-thing']).toBe('a');
  });

  it('checks the token before the body: an invalid body with no token is a 401, not a 400', async () => {
    expect((await ask('direct', 'shop/things/a', { count: 'x' }, null)).status).toBe(401);
  });
});

describe('routes that cannot be served directly', () => {
  class AllowAll implements CanActivate {
    canActivate(): boolean {
      return true;
    }
  }

  @Controller('guarded')
  class GuardedController {
    @Post()
    @ServedDirectly()
    @UseGuards(AllowAll)
    run(): object {
      return {};
    }
  }

  @Controller('guarded-class')
  @UseGuards(AllowAll)
  class GuardedClassController {
    @Post()
    @ServedDirectly()
    run(): object {
      return {};
    }
  }

  @Controller('raw')
  class RawReplyController {
    @Post()
    @ServedDirectly()
    run(@Res() reply: FastifyReply): void {
      void reply.send({});
    }
  }

  it('refuses to boot an app with a global interceptor (the built handler would skip it)', async () => {
    const app = await appWith(ThingsController);
    app.useGlobalInterceptors({ intercept: (_context, next) => next.handle() });
    installDirectRoutes(app, { validators: new Map(), pipe: createValidationPipe() });
    const registered = app.init().then(() => app.getHttpAdapter().getInstance().ready());
    await expect(registered).rejects.toThrow(/served directly: the app may not have global interceptors/);
    await app.close().catch(() => undefined);
  });

  it.each([
    ['its own guard', GuardedController, /GuardedController\.run .*guards/],
    ['a reply it sends itself', RawReplyController, /RawReplyController\.run .*parameter 0/],
    ["its controller's guard", GuardedClassController, /GuardedClassController\.run .*guards/],
  ])('refuses at boot a route with %s', async (_name, controller, message) => {
    const app = await appWith(controller);
    expect(() => installDirectRoutes(app, { validators: new Map(), pipe: createValidationPipe() })).toThrow(message);
    await app.close();
  });
});
