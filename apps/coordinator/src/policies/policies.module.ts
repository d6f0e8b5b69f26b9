import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { PoliciesController } from './policies.controller';
import { PolicyAdminService } from './policy-admin.service';
import { PolicySeeder } from './policy-seeder';

/**
 * The policies admin API and the seeding of the policies file into the store. The effective
 * policies themselves (PolicyService) are shared, in CoreModule.
 */
@Module({
  imports: [AuditModule],
  controllers: [PoliciesController],
  providers: [PolicyAdminService, PolicySeeder],
})
export class PoliciesModule {}
