import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import type { RetryDecision } from '@sluice/protocol';
import { DependencyParams } from '../common/params.dto';
import { RetryRequestDto } from './retry.dto';
import { RetryService } from './retry.service';

@Controller('v1/:ns/deps/:dep/retry')
export class RetryController {
  constructor(private readonly retries: RetryService) {}

  @Post()
  @HttpCode(200)
  decide(@Param() params: DependencyParams, @Body() body: RetryRequestDto): Promise<RetryDecision> {
    return this.retries.decide({ namespace: params.ns, dependency: params.dep }, body);
  }
}
