import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ROUTE_KIND } from '../auth/route-kind';
import { controllerRoutes } from './controller-routes';

/**
 * Boot fails for a route with no kind: every handler takes one of the route decorators of
 * routes.ts, which say who may call it, so none is left to a default.
 */
export function checkRouteKinds(app: NestFastifyApplication): void {
  const missing = controllerRoutes(app)
    .filter((route) => Reflect.getMetadata(ROUTE_KIND, route.method) === undefined)
    .map((route) => `${route.controller.name}.${route.name}`);
  if (missing.length > 0) {
    throw new Error(
      `routes without a route decorator (PublicRoute, ClientRoute, DecisionRoute, AdminRoute): ${missing.join(', ')}`,
    );
  }
}
