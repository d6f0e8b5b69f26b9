import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { SluiceConfig } from './config';

export const SLUICE_CONFIG = Symbol('SLUICE_CONFIG');

/** Makes the validated configuration injectable everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static register(config: SluiceConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: SLUICE_CONFIG, useValue: config }],
      exports: [SLUICE_CONFIG],
    };
  }
}
