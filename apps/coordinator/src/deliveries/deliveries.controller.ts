import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { DAY_MS, MAX_PAYLOAD_BYTES, type DeliveryAttemptResponse } from '@sluice/protocol';
import { ClientRoute } from '../http/routes';
import { ERRORS, sizeOf } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { DeliveriesService } from './deliveries.service';
import { QueueParams } from '../common/params.dto';
import { DeliveryAckDto, DeliveryAttemptDto } from './deliveries.dto';
import { ATTEMPT_RETENTION_MS, DEAD_LETTERS } from './delivery-limits';

const days = (ms: number) => ms / DAY_MS;

@ApiTags(TAGS.deliveries.name)
@Controller('v1/:ns/queues/:queue')
export class DeliveriesController {
  constructor(private readonly deliveries: DeliveriesService) {}

  @Post('attempts')
  @HttpCode(200)
  @ClientRoute({
    operationId: 'recordDeliveryAttempt',
    summary: 'Record a failed delivery attempt',
    description:
      'Counts one failed attempt of a message under the queue\u2019s policy and answers the backoff before the ' +
      'next delivery. The call that records attempt number `maxAttempts` answers `deadLetter: true` and parks ' +
      'the message (payload, last error, attempts) in the queue\u2019s dead-letter store (kept ' +
      `${days(DEAD_LETTERS.retentionMs)} days, at most ${DEAD_LETTERS.maxLength} per queue, the oldest going ` +
      `first). A message\u2019s count is forgotten ${days(ATTEMPT_RETENTION_MS)} days after its last failure.`,
    responses: [{ status: 200, description: 'The attempt counted.', schema: 'DeliveryAttemptResponse' }],
    errors: [
      { ...ERRORS.bodyTooLarge, description: `\`payload\`, as JSON, is over ${sizeOf(MAX_PAYLOAD_BYTES)}.` },
      ERRORS.tooManyNamespaces,
    ],
  })
  attempt(@Param() params: QueueParams, @Body() body: DeliveryAttemptDto): Promise<DeliveryAttemptResponse> {
    return this.deliveries.recordAttempt({ namespace: params.ns, queue: params.queue }, body);
  }

  @Post('acks')
  @HttpCode(204)
  @ClientRoute({
    operationId: 'ackDelivery',
    summary: 'Acknowledge a delivered message',
    description:
      'The message was handled: its attempt count is cleared. Acknowledging an unknown message is not an error.',
    responses: [{ status: 204, description: 'Acknowledged.' }],
  })
  ack(@Param() params: QueueParams, @Body() body: DeliveryAckDto): Promise<void> {
    return this.deliveries.ack({ namespace: params.ns, queue: params.queue }, body.messageId);
  }
}
