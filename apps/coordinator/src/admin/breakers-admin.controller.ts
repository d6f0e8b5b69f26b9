import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { BreakerActionResult, BreakerList, BudgetList } from '@sluice/protocol';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { DependencyParams, NamespaceParams } from '../common/params.dto';
import { AdminRoute } from '../http/routes';
import { tooManyDependencies } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { ForceBreakerDto, ResetBreakerDto } from './breaker-action.dto';
import { BreakersAdminService } from './breakers-admin.service';

const FORCED =
  'Fleet-wide, at once: every instance answers with the forced state until a reset, or until ' +
  '`durationSeconds` have passed (then the breaker is `closed` again). Audited with the reason. The answer\u2019s ' +
  '`known` is false when no caller has reported or asked for the dependency within a day: likely a typo.';

@ApiTags(TAGS.breakersAdmin.name)
@Controller('admin/v1/:ns')
export class BreakersAdminController {
  constructor(private readonly admin: BreakersAdminService) {}

  @Get('breakers')
  @AdminRoute({
    operationId: 'listBreakers',
    summary: 'List the namespace\u2019s breakers',
    description: 'Every dependency the namespace holds, with its breaker state and, when forced, the reason.',
    responses: [{ status: 200, description: 'The breakers.', schema: 'BreakerList' }],
  })
  async breakers(@Param() params: NamespaceParams): Promise<BreakerList> {
    return { items: await this.admin.breakers(params.ns) };
  }

  @Get('budgets')
  @AdminRoute({
    operationId: 'listBudgets',
    summary: 'List the namespace\u2019s retry budgets',
    responses: [{ status: 200, description: 'The budgets.', schema: 'BudgetList' }],
  })
  async budgets(@Param() params: NamespaceParams): Promise<BudgetList> {
    return { items: await this.admin.budgets(params.ns) };
  }

  @Post('breakers/:dep/trip')
  @HttpCode(200)
  @AdminRoute({
    operationId: 'tripBreaker',
    summary: 'Force a breaker open',
    description: `State \`forced_open\`: every call is denied \`breaker_open\`. ${FORCED}`,
    responses: [{ status: 200, description: 'The breaker, now forced open.', schema: 'BreakerActionResult' }],
    errors: [tooManyDependencies()],
  })
  trip(
    @Actor() actor: Principal,
    @Param() params: DependencyParams,
    @Body() body: ForceBreakerDto,
  ): Promise<BreakerActionResult> {
    return this.admin.act(actor, refOf(params), { action: 'trip', ...forced(body) });
  }

  @Post('breakers/:dep/force-close')
  @HttpCode(200)
  @AdminRoute({
    operationId: 'forceCloseBreaker',
    summary: 'Force a breaker closed',
    description: `State \`forced_closed\`: failures no longer open it. ${FORCED}`,
    responses: [{ status: 200, description: 'The breaker, now forced closed.', schema: 'BreakerActionResult' }],
    errors: [tooManyDependencies()],
  })
  forceClose(
    @Actor() actor: Principal,
    @Param() params: DependencyParams,
    @Body() body: ForceBreakerDto,
  ): Promise<BreakerActionResult> {
    return this.admin.act(actor, refOf(params), { action: 'force_close', ...forced(body) });
  }

  @Post('breakers/:dep/reset')
  @HttpCode(200)
  @AdminRoute({
    operationId: 'resetBreaker',
    summary: 'Reset a breaker',
    description:
      'Back to automatic operation: `closed`, its window cleared, whatever state it was in. The body (a reason ' +
      'for the audit log) may be left out.',
    responses: [{ status: 200, description: 'The breaker, now closed.', schema: 'BreakerActionResult' }],
    errors: [tooManyDependencies()],
    optionalBody: true,
  })
  reset(
    @Actor() actor: Principal,
    @Param() params: DependencyParams,
    @Body() body: ResetBreakerDto,
  ): Promise<BreakerActionResult> {
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
