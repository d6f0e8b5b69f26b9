import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from './auth.guard';
import { OPEN_MODE_PRINCIPAL, type Principal } from './token-registry';

/** The principal the auth guard found for this request (the open-mode admin when auth is off). */
export const Actor = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Principal =>
    context.switchToHttp().getRequest<AuthenticatedRequest>().principal ?? OPEN_MODE_PRINCIPAL,
);
