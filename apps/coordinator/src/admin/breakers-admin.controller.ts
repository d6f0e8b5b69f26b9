import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { AdminOnly } from '../auth/access.decorators';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { DependencyParams, NamespaceParams } from '../common/params.dto';
import { ForceBreakerDto, ResetBreakerDto } from './breaker-action.dto';
import { BreakersAdminService, type BreakerItem, type BudgetItem } from './breakers-admin.service';

@AdminOnly()
@Controller('admin/v1/:ns')
export class BreakersAdminController {
  constructor(private readonly admin: BreakersAdminService) {}

  @Get('breakers')
  async breakers(@Param() params: NamespaceParams): Promise<{ items: BreakerItem[] }> {
    return { items: await this.admin.breakers(params.ns) };
  }

  @Get('budgets')
  async budgets(@Param() params: NamespaceParams): Promise<{ items: BudgetItem[] }> {
    return { items: await this.admin.budgets(params.ns) };
  }

  @Post('breakers/:dep/trip')
  @HttpCode(200)
  trip(
    @Actor() actor: Principal,
    @Param() params: DependencyParams,
    @Body() body: ForceBreakerDto,
  ): Promise<BreakerItem> {
    return this.admin.act(actor, refOf(params), { action: 'trip', ...forced(body) });
  }

  @Post('breakers/:dep/force-close')
  @HttpCode(200)
  forceClose(
    @Actor() actor: Principal,
    @Param() params: DependencyParams,
    @Body() body: ForceBreakerDto,
  ): Promise<BreakerItem> {
    return this.admin.act(actor, refOf(params), { action: 'force_close', ...forced(body) });
  }

  @Post('breakers/:dep/reset')
  @HttpCode(200)
  reset(
    @Actor() actor: Principal,
    @Param() params: DependencyParams,
    @Body() body: ResetBreakerDto,
  ): Promise<BreakerItem> {
    return this.admin.act(actor, refOf(params), { action: 'reset', reason: body.reason });
  }
}

function refOf(params: DependencyParams) {
  return { namespace: params.ns, dependency: params.dep };
}

function forced(body: ForceBreakerDto) {
  return {
    reason: body.reason,
    durationMs: body.durationSeconds === undefined ? undefined : body.durationSeconds * 1000,
  };
}
