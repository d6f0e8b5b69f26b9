import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { AdminModule } from './admin/admin.module';
import { AdmissionModule } from './admission/admission.module';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { BudgetsModule } from './budgets/budgets.module';
import { HttpErrorFilter } from './http/error-writer';
import { createValidationPipe } from './http/validation/pipe';
import { CoreModule, type CoreModuleOptions } from './core.module';
import { DeliveriesModule } from './deliveries/deliveries.module';
import { EventsModule } from './events/events.module';
import { HealthModule } from './health/health.module';
import { HomeModule } from './home/home.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { LimitsModule } from './limits/limits.module';
import { MetricsModule } from './metrics/metrics.module';
import { PoliciesModule } from './policies/policies.module';

export type AppModuleOptions = CoreModuleOptions;

/** The coordinator: the shared core, one module per feature, and the app-wide pipe and error filter. */
@Module({})
export class AppModule {
  static register(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.register(options),
        AuthModule,
        BudgetsModule,
        AdmissionModule,
        LimitsModule,
        EventsModule,
        AdminModule,
        PoliciesModule,
        AuditModule,
        IdempotencyModule,
        DeliveriesModule,
        HealthModule,
        HomeModule,
        MetricsModule,
      ],
      providers: [
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: HttpErrorFilter },
      ],
    };
  }
}
