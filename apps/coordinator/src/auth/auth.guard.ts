import { CanActivate, ExecutionContext, Injectable, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { RESOURCE_NAME_PATTERN } from '@sluice/protocol';
import { ApiError, validationFailed } from '../common/api-error';
import { ROUTE_KIND, type RouteKind } from './route-kind';
import { OPEN_MODE_PRINCIPAL, TokenRegistry, mayTouchNamespace, type Principal } from './token-registry';

export type AuthenticatedRequest = FastifyRequest & { principal?: Principal };

const BEARER = /^Bearer ([^\s]+)$/i;

/** Who may call a route, from its kind (http/routes.ts). */
export interface RouteAccess {
  public: boolean;
  adminOnly: boolean;
}

/** Bearer-token authentication and role/namespace authorization for every non-public route. */
@Injectable()
export class AuthGuard implements CanActivate {
  /** Each route's access (by controller class, then handler), read from its metadata once, not per request. */
  private readonly access = new WeakMap<object, WeakMap<object, RouteAccess>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokenRegistry,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    this.authorize(
      context.switchToHttp().getRequest<AuthenticatedRequest>(),
      this.accessOf(context.getClass(), context.getHandler()),
    );
    return true;
  }

  /**
   * Throws the API's 401 or 403 unless the request may call a route of this access; on success the
   * request carries its `principal`.
   */
  authorize(request: AuthenticatedRequest, access: RouteAccess): void {
    if (access.public) return;
    const principal = this.authenticate(request);
    if (access.adminOnly && principal.role !== 'admin') {
      throw new ApiError(403, 'forbidden', 'this route needs an admin token');
    }
    const namespace = namespaceOf(request);
    // A name no namespace can have is a mistake in the request, said to every token (a scope
    // refusal would hide it from a client token scoped to the name it meant).
    if (namespace !== undefined && !RESOURCE_NAME_PATTERN.test(namespace)) {
      throw validationFailed([{ field: 'ns', message: `must match ${RESOURCE_NAME_PATTERN.source}` }]);
    }
    if (namespace !== undefined && !mayTouchNamespace(principal, namespace)) {
      throw new ApiError(403, 'forbidden', `the token may not touch namespace "${namespace}"`);
    }
    request.principal = principal;
  }

  /** The access of a controller's handler, read from its metadata once. */
  accessOf(controller: Type, handler: ReturnType<ExecutionContext['getHandler']>): RouteAccess {
    let routes = this.access.get(controller);
    if (!routes) this.access.set(controller, (routes = new WeakMap()));
    let access = routes.get(handler);
    if (!access) {
      const kind = this.reflector.get<RouteKind | undefined>(ROUTE_KIND, handler);
      access = { public: kind === 'public', adminOnly: kind === 'admin' };
      routes.set(handler, access);
    }
    return access;
  }

  private authenticate(request: FastifyRequest): Principal {
    if (!this.tokens.enabled) return OPEN_MODE_PRINCIPAL;
    const match = BEARER.exec(request.headers.authorization ?? '');
    const principal = match ? this.tokens.authenticate(match[1]) : undefined;
    if (!principal) {
      throw new ApiError(401, 'unauthorized', match ? 'unknown token' : 'a bearer token is required', undefined, {
        'www-authenticate': 'Bearer realm="sluice"',
      });
    }
    return principal;
  }
}

/** The namespace a request is about: the `ns` route parameter, or `?ns=` on namespace-wide admin reads. */
function namespaceOf(request: FastifyRequest): string | undefined {
  const params = request.params as Record<string, string> | undefined;
  if (params?.ns !== undefined) return params.ns;
  const query = request.query as Record<string, unknown> | undefined;
  return typeof query?.ns === 'string' ? query.ns : undefined;
}
