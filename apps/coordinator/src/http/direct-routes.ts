import { type ArgumentMetadata, type PipeTransform, RequestMethod, SetMetadata, type Type } from '@nestjs/common';
import {
  CUSTOM_ROUTE_ARGS_METADATA,
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  HTTP_CODE_METADATA,
  INTERCEPTORS_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  PIPES_METADATA,
  RESPONSE_PASSTHROUGH_METADATA,
  ROUTE_ARGS_METADATA,
} from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ApplicationConfig } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { AuthGuard, type AuthenticatedRequest } from '../auth/auth.guard';
import { controllerRoutes, type ControllerRoute } from './controller-routes';
import { sendError } from './error-writer';
import type { RequestValidators } from './validation/compile';
import { validateAgainst } from './validation/install';
import { isCheckedBySchema } from './validation/pipe';

const SERVED_DIRECTLY = 'sluice:served-directly';

/**
 * The route is served by a handler built once at boot instead of Nest's per-request pipeline
 * (execution context, guard and pipe consumers, interceptor chain, exception zone): the same checks
 * in the same order — the token (AuthGuard), the compiled request schemas, the global pipe for a
 * DTO the schemas do not state in full — then the method, its answer with the route's status and
 * compiled serializer, and any error through the API's error body. For the decision routes, which
 * carry the fleet's load when a dependency fails.
 *
 * Boot fails if such a route uses what the built handler does not do: its own guards,
 * interceptors, pipes or filters, or parameters other than `@Param()`, `@Body()` and
 * `@Res({ passthrough: true })`.
 *
 * @example
 * @Post() @HttpCode(200) @ServedDirectly() decide(@Param() params: DependencyParams, @Body() body: RetryRequestDto)
 */
export const ServedDirectly = (): MethodDecorator => SetMetadata(SERVED_DIRECTLY, true);

/** What the built handlers share with Nest's pipeline. */
export interface DirectRouteParts {
  validators: RequestValidators;
  /** The app's global pipe (APP_PIPE), for the DTOs it does not hand on as they are. */
  pipe: PipeTransform;
}

type Method = ControllerRoute['method'];
type ArgumentOf = (request: FastifyRequest, reply: FastifyReply) => unknown;
type Handler = (request: FastifyRequest, reply: FastifyReply) => void;

interface ArgumentSpec {
  index: number;
  read: ArgumentOf;
  metadata?: ArgumentMetadata;
}

/**
 * Puts the built handler in place of Nest's for every `@ServedDirectly()` route, as Fastify
 * registers it (an `onRoute` hook). Call before `app.init()`, which registers the routes.
 */
export function installDirectRoutes(app: NestFastifyApplication, parts: DirectRouteParts): void {
  const auth = app.get(AuthGuard);
  const handlers = new Map<string, Handler>();
  for (const { controller, instance, name, method } of controllerRoutes(app)) {
    if (Reflect.getMetadata(SERVED_DIRECTLY, method) !== true) continue;
    const route = `${RequestMethod[Reflect.getMetadata(METHOD_METADATA, method) as RequestMethod]} ${urlOf(controller, method)}`;
    handlers.set(route, buildHandler({ route, controller, instance, name, method, auth, parts }));
  }
  const config = app.get(ApplicationConfig);
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRoute', (options: RouteOptions) => {
      const methods = Array.isArray(options.method) ? options.method : [options.method];
      const handler = methods.length === 1 ? handlers.get(`${methods[0]} ${options.url}`) : undefined;
      if (!handler) return;
      // The built handler runs no interceptor: a global one would be skipped without a word.
      if (config.getGlobalInterceptors().length + config.getGlobalRequestInterceptors().length > 0) {
        throw new Error(`${methods[0]} ${options.url} is served directly: the app may not have global interceptors`);
      }
      options.handler = handler;
    });
}

/** Nest's route path: the controller's path and the method's, one leading slash, no trailing one. */
function urlOf(controller: object, method: object): string {
  const parts = [Reflect.getMetadata(PATH_METADATA, controller), Reflect.getMetadata(PATH_METADATA, method)];
  const path = parts
    .map((part: string | undefined) => (part ?? '').replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/');
  return `/${path}`;
}

function buildHandler(built: {
  /** `METHOD /url`, as Fastify registers the route and the validators are keyed. */
  route: string;
  controller: Type;
  instance: Record<string, unknown>;
  name: string;
  method: Method;
  auth: AuthGuard;
  parts: DirectRouteParts;
}): Handler {
  const { route, controller, instance, name, method, auth, parts } = built;
  const where = `${(controller as { name: string }).name}.${name}`;
  for (const key of [GUARDS_METADATA, INTERCEPTORS_METADATA, PIPES_METADATA, EXCEPTION_FILTERS_METADATA]) {
    const own = [method, controller].flatMap((target) => (Reflect.getMetadata(key, target) as unknown[]) ?? []);
    if (own.length > 0) {
      throw new Error(`${where} is served directly: it may not have its own ${key.replace(/_/g, '')}`);
    }
  }
  const access = auth.accessOf(controller, method);
  const httpMethod = Reflect.getMetadata(METHOD_METADATA, method) as RequestMethod;
  // The route's compiled schemas, found once rather than per request.
  const validator = parts.validators.get(route);
  const status =
    (Reflect.getMetadata(HTTP_CODE_METADATA, method) as number | undefined) ??
    (httpMethod === RequestMethod.POST ? 201 : 200);
  const args = argumentsOf(controller, name, where);
  const call = method.bind(instance) as (...values: unknown[]) => unknown;
  const checked = args.filter((arg) => arg.metadata !== undefined);

  return (request, reply) => {
    // Fastify's router matches an empty segment for a parameter; Nest's adapter answers 404 for it.
    const params = request.params as Record<string, string>;
    for (const key in params) {
      if (params[key] === '') return void reply.callNotFound();
    }
    let answer: unknown;
    try {
      auth.authorize(request as AuthenticatedRequest, access);
      validateAgainst(validator, request);
      const values = args.map((arg) => arg.read(request, reply));
      answer =
        checked.length === 0
          ? call(...values)
          : Promise.all(checked.map((arg) => parts.pipe.transform(values[arg.index], arg.metadata!))).then(
              (transformed) => {
                checked.forEach((arg, i) => (values[arg.index] = transformed[i]));
                return call(...values);
              },
            );
    } catch (error) {
      return sendError(error, request, reply);
    }
    // As in Nest's pipeline, a failure while sending the answer is answered as an error too.
    const send = (result: unknown) => {
      try {
        void reply.code(status).send(result);
      } catch (error) {
        sendError(error, request, reply);
      }
    };
    // One reaction on the method's promise, no promise of our own on top.
    if (answer instanceof Promise) answer.then(send, (error: unknown) => sendError(error, request, reply));
    else send(answer);
  };
}

/** Each parameter's reader, in order, with the pipe's metadata for those the pipe must see. */
function argumentsOf(controller: Type, name: string, where: string): ArgumentSpec[] {
  const declared = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) ?? {}) as Record<
    string,
    { index: number; data?: unknown; pipes?: unknown[] }
  >;
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, name) ?? []) as unknown[];
  const passthrough = Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, controller, name) === true;
  const refused = (index: number) =>
    new Error(
      `${where} is served directly: its parameter ${index} must be a whole @Param(), @Body() or @Res({ passthrough: true })`,
    );
  const specs: ArgumentSpec[] = [];
  for (const [key, { index, data, pipes }] of Object.entries(declared)) {
    const type = Number(key.split(':')[0]) as RouteParamtypes;
    if (data !== undefined || (pipes?.length ?? 0) > 0 || key.includes(CUSTOM_ROUTE_ARGS_METADATA))
      throw refused(index);
    if (type === RouteParamtypes.PARAM || type === RouteParamtypes.BODY) {
      const part = type === RouteParamtypes.PARAM ? 'params' : 'body';
      const metatype = types[index];
      // The pipe hands a DTO the schemas checked in full on as it is (an absent body as an empty one).
      if (isCheckedBySchema(metatype)) specs.push({ index, read: (request) => request[part] ?? {} });
      else
        specs.push({
          index,
          read: (request) => request[part],
          metadata: {
            type: type === RouteParamtypes.PARAM ? 'param' : 'body',
            metatype: metatype as ArgumentMetadata['metatype'],
          },
        });
    } else if (type === RouteParamtypes.RESPONSE && passthrough) {
      specs.push({ index, read: (_request, reply) => reply });
    } else {
      throw refused(index);
    }
  }
  return specs.sort((a, b) => a.index - b.index);
}
