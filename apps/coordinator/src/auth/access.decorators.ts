import { SetMetadata } from '@nestjs/common';

export const PUBLIC_ROUTE = 'sluice:public';
export const ADMIN_ROUTE = 'sluice:admin';

/** No token needed (health, metrics, docs). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

/** Only `admin` tokens. */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ADMIN_ROUTE, true);
