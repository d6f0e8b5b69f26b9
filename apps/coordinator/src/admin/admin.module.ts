import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { BreakersAdminController } from './breakers-admin.controller';
import { BreakersAdminService } from './breakers-admin.service';

/** Operators' breaker and budget views, and forcing a breaker open or closed. */
@Module({
  imports: [AuditModule],
  controllers: [BreakersAdminController],
  providers: [BreakersAdminService],
})
export class AdminModule {}
