import type { Type } from '@nestjs/common';
import { METHOD_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

/** A route handler of one of the app's controllers, as Nest's metadata holds it. */
export interface ControllerRoute {
  controller: Type;
  instance: Record<string, unknown>;
  name: string;
  method: (...args: never[]) => unknown;
}

/** Every method with an HTTP method decorator (`@Get()`, `@Post()`…) of every controller of the app. */
export function controllerRoutes(app: NestFastifyApplication): ControllerRoute[] {
  const routes: ControllerRoute[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      const controller = wrapper.metatype as Type | undefined;
      if (!instance || !controller) continue;
      for (const name of Object.getOwnPropertyNames(controller.prototype)) {
        if (name === 'constructor') continue;
        const method = (controller.prototype as Record<string, unknown>)[name];
        if (typeof method !== 'function' || Reflect.getMetadata(METHOD_METADATA, method) === undefined) continue;
        routes.push({ controller, instance, name, method: method as ControllerRoute['method'] });
      }
    }
  }
  return routes;
}
