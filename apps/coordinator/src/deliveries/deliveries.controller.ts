import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import type { DeliveryAttemptResponse } from '@sluice/protocol';
import { DeliveriesService } from './deliveries.service';
import { QueueParams } from '../common/params.dto';
import { DeliveryAckDto, DeliveryAttemptDto } from './deliveries.dto';

@Controller('v1/:ns/queues/:queue')
export class DeliveriesController {
  constructor(private readonly deliveries: DeliveriesService) {}

  @Post('attempts')
  @HttpCode(200)
  attempt(@Param() params: QueueParams, @Body() body: DeliveryAttemptDto): Promise<DeliveryAttemptResponse> {
    return this.deliveries.recordAttempt({ namespace: params.ns, queue: params.queue }, body);
  }

  @Post('acks')
  @HttpCode(204)
  ack(@Param() params: QueueParams, @Body() body: DeliveryAckDto): Promise<void> {
    return this.deliveries.ack({ namespace: params.ns, queue: params.queue }, body.messageId);
  }
}
