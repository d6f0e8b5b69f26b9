import fastifyStatic from '@fastify/static';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { join } from 'node:path';

/** The operators' console: static files, public like /docs; every call it makes takes the operator's admin token. */
export const CONSOLE_PATH = '/console';

/** apps/coordinator/src/console, copied beside the built code by nest-cli.json's `assets`. */
export const CONSOLE_ROOT = join(__dirname, '..', 'console');

/**
 * Only this origin's files and API: no CDN, no inline script, no framing. The token lives in the
 * page's sessionStorage, so nothing else may run there.
 */
const CONSOLE_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-cache',
};

/** Serves the console at /console/ (and /console redirects there), from every instance. */
export async function setupConsole(app: NestFastifyApplication): Promise<void> {
  await app.register(fastifyStatic, {
    root: CONSOLE_ROOT,
    prefix: `${CONSOLE_PATH}/`,
    redirect: true,
    decorateReply: false,
    setHeaders: (reply) => reply.headers(CONSOLE_HEADERS),
  });
  app
    .getHttpAdapter()
    .getInstance()
    .get(CONSOLE_PATH, (_request, reply) => reply.redirect(`${CONSOLE_PATH}/`, 301));
}
