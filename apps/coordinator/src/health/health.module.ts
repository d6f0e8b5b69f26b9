import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';

/** Liveness and readiness. */
@Module({
  controllers: [HealthController],
})
export class HealthModule {}
