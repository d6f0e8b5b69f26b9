import { Module } from '@nestjs/common';
import { AdmitController } from './admit.controller';
import { AdmitService } from './admit.service';
import { LeasesController } from './leases.controller';
import { LeasesService } from './leases.service';

/** Admission through the breaker and the concurrency leases it grants. */
@Module({
  controllers: [AdmitController, LeasesController],
  providers: [AdmitService, LeasesService],
})
export class AdmissionModule {}
