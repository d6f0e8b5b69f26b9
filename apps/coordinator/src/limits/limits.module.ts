import { Module } from '@nestjs/common';
import { LimitsController } from './limits.controller';
import { LimitsService } from './limits.service';

/** Named rate limits. */
@Module({
  controllers: [LimitsController],
  providers: [LimitsService],
})
export class LimitsModule {}
