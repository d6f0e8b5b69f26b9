/**
 * What kind a route is, and so who may call it: `public` (no token: health, metrics), `client` and
 * `decision` (`/v1`: a `client` or `admin` token whose namespaces include `{ns}`), `admin`
 * (`/admin/v1`: an `admin` token). Set by the route decorators of http/routes.ts, with the route's
 * documentation and serializer; read by the AuthGuard.
 */
export type RouteKind = 'public' | 'client' | 'decision' | 'admin';

/** The metadata key holding a handler's RouteKind. */
export const ROUTE_KIND = 'sluice:route-kind';
