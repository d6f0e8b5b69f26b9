import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';

/** GET /metrics. The metrics themselves (MetricsService) are shared, in CoreModule. */
@Module({
  controllers: [MetricsController],
})
export class MetricsModule {}
