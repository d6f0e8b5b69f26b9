import { Module } from '@nestjs/common';
import { IdempotencyController } from './idempotency.controller';
import { IdempotencyService } from './idempotency.service';

/** Idempotency keys: claim, complete, release, read. */
@Module({
  controllers: [IdempotencyController],
  providers: [IdempotencyService],
})
export class IdempotencyModule {}
