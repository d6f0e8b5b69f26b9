import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { BreakersAdminController } from './admin/breakers-admin.controller';
import { BreakersAdminService } from './admin/breakers-admin.service';
import { PoliciesController } from './policies/policies.controller';
import { AuditController } from './audit/audit.controller';
import { AuditService } from './audit/audit.service';
import { AuthGuard } from './auth/auth.guard';
import { AdmitController } from './admission/admit.controller';
import { AdmitService } from './admission/admit.service';
import { BreakerMetrics } from './breakers/breaker-metrics';
import { LeasesController } from './admission/leases.controller';
import { LeasesService } from './admission/leases.service';
import { TokenRegistry } from './auth/token-registry';
import { DependencyViewController } from './budgets/dependency-view.controller';
import { DependencyViewService } from './budgets/dependency-view.service';
import { ReportsController } from './budgets/reports.controller';
import { ReportsService } from './budgets/reports.service';
import { RetryController } from './budgets/retry.controller';
import { RetryService } from './budgets/retry.service';
import { HttpErrorFilter } from './common/http-error.filter';
import { DeadLetterDepth } from './deliveries/dead-letter-depth.service';
import { DeadLettersController } from './deliveries/dead-letters.controller';
import { DeadLettersService } from './deliveries/dead-letters.service';
import { DeliveriesController } from './deliveries/deliveries.controller';
import { DeliveriesService } from './deliveries/deliveries.service';
import { IdempotencyController } from './idempotency/idempotency.controller';
import { IdempotencyService } from './idempotency/idempotency.service';
import { createValidationPipe } from './common/validation.pipe';
import type { SluiceConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { DependencyRegistry } from './dependencies/dependency-registry.service';
import { EventsController } from './events/events.controller';
import { EventStreamService } from './events/event-stream.service';
import { HealthController } from './health/health.controller';
import { LimitsController } from './limits/limits.controller';
import { LimitsService } from './limits/limits.service';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsService } from './metrics/metrics.service';
import type { PoliciesFile } from './policies/policies-file';
import { PolicyAdminService } from './policies/policy-admin.service';
import { PolicySeeder } from './policies/policy-seeder';
import { POLICIES_FILE, PolicyService } from './policies/policy.service';
import { StoreLifecycle } from './store/store-lifecycle';
import { storeProvider } from './store/store.provider';

export interface AppModuleOptions {
  config: SluiceConfig;
  policies: PoliciesFile;
}

@Module({})
export class AppModule {
  static register({ config, policies }: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [ConfigModule.register(config)],
      controllers: [
        RetryController,
        ReportsController,
        DependencyViewController,
        AdmitController,
        LeasesController,
        LimitsController,
        EventsController,
        BreakersAdminController,
        PoliciesController,
        AuditController,
        IdempotencyController,
        DeliveriesController,
        DeadLettersController,
        HealthController,
        MetricsController,
      ],
      providers: [
        storeProvider,
        MetricsService,
        PolicyService,
        DependencyRegistry,
        RetryService,
        ReportsService,
        DependencyViewService,
        AdmitService,
        LeasesService,
        LimitsService,
        BreakerMetrics,
        BreakersAdminService,
        EventStreamService,
        AuditService,
        PolicyAdminService,
        PolicySeeder,
        IdempotencyService,
        DeliveriesService,
        DeadLettersService,
        DeadLetterDepth,
        { provide: POLICIES_FILE, useValue: policies },
        { provide: TokenRegistry, useValue: new TokenRegistry(config.tokens) },
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: HttpErrorFilter },
        StoreLifecycle,
      ],
    };
  }
}
