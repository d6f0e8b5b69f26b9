import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from './auth.guard';
import { OPEN_MODE_PRINCIPAL, type Principal } from './token-registry';

/** The principal the AuthGuard authenticated: who is acting (for admin actions). */
export const Actor = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Principal =>
    context.switchToHttp().getRequest<AuthenticatedRequest>().principal ?? OPEN_MODE_PRINCIPAL,
);
