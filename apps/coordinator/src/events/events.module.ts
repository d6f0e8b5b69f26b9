import { Module } from '@nestjs/common';
import { EventsController } from './events.controller';
import { EventStreamService } from './event-stream.service';

/** The server-sent event stream of breaker and policy changes. */
@Module({
  controllers: [EventsController],
  providers: [EventStreamService],
  exports: [EventStreamService],
})
export class EventsModule {}
