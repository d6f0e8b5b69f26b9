import { Controller, Get, Header, Headers, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { ServiceIndex } from '@sluice/protocol';
import { PublicRoute } from '../http/routes';
import { DOCS_PATH, DOCUMENT_PATH } from '../openapi/document';
import { componentRef } from '../openapi/schema-helpers';
import { TAGS } from '../openapi/tags';
import { CONSOLE_PATH } from '../web-console/serve-console';

const INDEX: ServiceIndex = {
  service: 'sluice',
  message:
    `This is a Sluice coordinator. Operators: the web console is at ${CONSOLE_PATH}/ (an admin token). ` +
    `The HTTP API is described at ${DOCS_PATH} (OpenAPI document: ${DOCUMENT_PATH}).`,
  console: `${CONSOLE_PATH}/`,
  docs: DOCS_PATH,
  openapi: DOCUMENT_PATH,
};

/** The same for a browser: relative links, so they still work behind a proxy that adds a path prefix. */
const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sluice</title></head>
<body>
<h1>Sluice coordinator</h1>
<ul>
<li><a href=".${CONSOLE_PATH}/">Web console</a> (${CONSOLE_PATH}/): breakers, budgets, policies, dead letters and audit, with an admin token</li>
<li><a href=".${DOCS_PATH}">API documentation</a> (${DOCS_PATH}); the OpenAPI document is at <a href=".${DOCUMENT_PATH}">${DOCUMENT_PATH}</a></li>
</ul>
</body>
</html>
`;

/**
 * `GET /`: whoever opens the service's address learns where to go. A browser (it asks for
 * text/html) gets a page of links, anything else the same as JSON; no redirect, no token.
 */
@ApiTags(TAGS.operations.name)
@Controller()
export class HomeController {
  @Get()
  @Header('vary', 'accept')
  @Header('cache-control', 'no-cache')
  @PublicRoute({
    operationId: 'home',
    summary: 'Where to go from here',
    description:
      'Points to the web console (`/console/`) and the API description (`/docs`, `/docs-json`): an HTML page of ' +
      'links when `Accept` names `text/html` (a browser), JSON otherwise.',
    responses: [
      {
        status: 200,
        description: 'The pointers.',
        content: {
          'application/json': { schema: componentRef('ServiceIndex') },
          'text/html': { schema: { type: 'string' } },
        },
      },
    ],
    store: false,
  })
  home(
    @Headers('accept') accept: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): ServiceIndex | string {
    if (!/\btext\/html\b/i.test(accept ?? '')) return INDEX;
    reply.header('content-type', 'text/html; charset=utf-8');
    reply.header('content-security-policy', "default-src 'none'");
    return PAGE;
  }
}
