import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { DeadLetterDepth } from './dead-letter-depth.service';
import { DeadLetterQueuesController } from './dead-letter-queues.controller';
import { DeadLettersController } from './dead-letters.controller';
import { DeadLettersService } from './dead-letters.service';
import { DeliveriesController } from './deliveries.controller';
import { DeliveriesService } from './deliveries.service';

/** Delivery attempts of queued messages and the dead letters past their last attempt. */
@Module({
  imports: [AuditModule],
  controllers: [DeliveriesController, DeadLettersController, DeadLetterQueuesController],
  providers: [DeliveriesService, DeadLettersService, DeadLetterDepth],
})
export class DeliveriesModule {}
