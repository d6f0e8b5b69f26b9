import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { BreakersAdminController } from './breakers-admin.controller';
import { BreakersAdminService } from './breakers-admin.service';
import { NamespacesAdminController } from './namespaces-admin.controller';
import { NamespacesAdminService } from './namespaces-admin.service';

/** Operators' namespace, breaker and budget views, and forcing a breaker open or closed. */
@Module({
  imports: [AuditModule],
  controllers: [NamespacesAdminController, BreakersAdminController],
  providers: [BreakersAdminService, NamespacesAdminService],
})
export class AdminModule {}
