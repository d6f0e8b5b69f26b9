import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import type { AdmitDecision } from '@sluice/protocol';
import { DependencyParams } from '../common/params.dto';
import { AdmitRequestDto } from './admit.dto';
import { AdmitService } from './admit.service';

@Controller('v1/:ns/deps/:dep/admit')
export class AdmitController {
  constructor(private readonly admissions: AdmitService) {}

  @Post()
  @HttpCode(200)
  admit(@Param() params: DependencyParams, @Body() body: AdmitRequestDto = {}): Promise<AdmitDecision> {
    return this.admissions.admit({ namespace: params.ns, dependency: params.dep }, body.cost);
  }
}
