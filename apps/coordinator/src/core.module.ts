import { Global, Module, type DynamicModule } from '@nestjs/common';
import { systemClock, type Clock } from '@sluice/core';
import { BreakerMetrics } from './breakers/breaker-metrics';
import { ForcedStates } from './breakers/forced-states';
import type { SluiceConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { DependencyRegistry } from './dependencies/dependency-registry.service';
import { MetricsService } from './metrics/metrics.service';
import type { PoliciesFile } from './policies/policies-file';
import { POLICIES_FILE, PolicyService } from './policies/policy.service';
import { ResetWatcher } from './store/reset-watcher';
import { StoreLifecycle } from './store/store-lifecycle';
import { STORE, STORE_CLOCK, storeProvider } from './store/store.provider';

export interface CoreModuleOptions {
  config: SluiceConfig;
  policies: PoliciesFile;
  /** The embedded store's clock (tests drive one); the system's by default. Redis keeps its own. */
  storeClock?: Clock;
}

/**
 * What every feature shares: the validated configuration, the store (its lifecycle, and the
 * watch for a store that lost its data), the metrics, the effective policies, the forced breaker
 * states this instance knows and the registry of known dependencies. Global, so a feature
 * module lists only its own controllers and providers.
 */
@Global()
@Module({})
export class CoreModule {
  static register({ config, policies, storeClock = systemClock }: CoreModuleOptions): DynamicModule {
    return {
      module: CoreModule,
      imports: [ConfigModule.register(config)],
      providers: [
        storeProvider,
        StoreLifecycle,
        ResetWatcher,
        MetricsService,
        ForcedStates,
        BreakerMetrics,
        DependencyRegistry,
        PolicyService,
        { provide: POLICIES_FILE, useValue: policies },
        { provide: STORE_CLOCK, useValue: storeClock },
      ],
      exports: [
        STORE,
        MetricsService,
        ResetWatcher,
        ForcedStates,
        BreakerMetrics,
        DependencyRegistry,
        PolicyService,
        POLICIES_FILE,
      ],
    };
  }
}
