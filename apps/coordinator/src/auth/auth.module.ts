import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { AuthGuard } from './auth.guard';
import { TokenRegistry } from './token-registry';
import { TokensFileReloader } from './tokens-file-reloader';

/** Bearer tokens from the configuration (a tokens file reloaded as it changes), checked on every route by a global guard. */
@Module({
  providers: [
    {
      provide: TokenRegistry,
      inject: [SLUICE_CONFIG],
      useFactory: (config: SluiceConfig) => new TokenRegistry(config.tokens),
    },
    TokensFileReloader,
    AuthGuard,
    { provide: APP_GUARD, useExisting: AuthGuard },
  ],
  exports: [AuthGuard],
})
export class AuthModule {}
