import { Body, Controller, Delete, Get, HttpCode, Param, Put, Query, UseInterceptors } from '@nestjs/common';
import { AdminOnly } from '../auth/access.decorators';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { DependencyParams, LimitParams, NamespaceParams, QueueParams } from '../common/params.dto';
import { PolicyAdminService } from '../policies/policy-admin.service';
import { DependencyPolicyDto, QueuePolicyDto, NamedLimitPolicyDto } from '../policies/policy.dto';
import { PolicyDocumentInterceptor } from '../policies/policy-document.interceptor';
import { WritePrecondition, type Precondition } from '../policies/policy-preconditions';
import type { PolicyTarget, VersionedPolicy } from '../policies/policy-target';
import { PolicyChangeQuery } from './policies.dto';

/**
 * Policy documents: a namespace's default, and one per dependency, named limit or queue.
 * GET answers the stored document with `ETag: "<version>"`; PUT stores a validated document and
 * answers it with its new ETag; DELETE answers 204. PUT and DELETE honour `If-Match` (`"<version>"`
 * or `*`; 412 precondition_failed when it does not hold) and `If-None-Match: *` (create only), and
 * take `?reason=` for the audit log.
 */
@AdminOnly()
@UseInterceptors(PolicyDocumentInterceptor)
@Controller('admin/v1/:ns/policies')
export class PoliciesController {
  constructor(private readonly policies: PolicyAdminService) {}

  @Get('default')
  readDefault(@Param() params: NamespaceParams): Promise<VersionedPolicy> {
    return this.policies.read(defaultOf(params));
  }

  @Put('default')
  putDefault(
    @Param() params: NamespaceParams,
    @Body() policy: DependencyPolicyDto,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<VersionedPolicy> {
    return this.policies.put(defaultOf(params), policy, { actor, precondition, reason: query.reason });
  }

  @Delete('default')
  @HttpCode(204)
  deleteDefault(
    @Param() params: NamespaceParams,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<void> {
    return this.policies.remove(defaultOf(params), { actor, precondition, reason: query.reason });
  }

  @Get('deps/:dep')
  readDependency(@Param() params: DependencyParams): Promise<VersionedPolicy> {
    return this.policies.read(dependencyOf(params));
  }

  @Put('deps/:dep')
  putDependency(
    @Param() params: DependencyParams,
    @Body() policy: DependencyPolicyDto,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<VersionedPolicy> {
    return this.policies.put(dependencyOf(params), policy, { actor, precondition, reason: query.reason });
  }

  @Delete('deps/:dep')
  @HttpCode(204)
  deleteDependency(
    @Param() params: DependencyParams,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<void> {
    return this.policies.remove(dependencyOf(params), { actor, precondition, reason: query.reason });
  }

  @Get('limits/:limit')
  readLimit(@Param() params: LimitParams): Promise<VersionedPolicy> {
    return this.policies.read(limitOf(params));
  }

  @Put('limits/:limit')
  putLimit(
    @Param() params: LimitParams,
    @Body() policy: NamedLimitPolicyDto,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<VersionedPolicy> {
    return this.policies.put(limitOf(params), policy, { actor, precondition, reason: query.reason });
  }

  @Delete('limits/:limit')
  @HttpCode(204)
  deleteLimit(
    @Param() params: LimitParams,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<void> {
    return this.policies.remove(limitOf(params), { actor, precondition, reason: query.reason });
  }

  @Get('queues/:queue')
  readQueue(@Param() params: QueueParams): Promise<VersionedPolicy> {
    return this.policies.read(queueOf(params));
  }

  @Put('queues/:queue')
  putQueue(
    @Param() params: QueueParams,
    @Body() policy: QueuePolicyDto,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<VersionedPolicy> {
    return this.policies.put(queueOf(params), policy, { actor, precondition, reason: query.reason });
  }

  @Delete('queues/:queue')
  @HttpCode(204)
  deleteQueue(
    @Param() params: QueueParams,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<void> {
    return this.policies.remove(queueOf(params), { actor, precondition, reason: query.reason });
  }
}

const defaultOf = (params: NamespaceParams): PolicyTarget => ({ namespace: params.ns, kind: 'default', name: '' });
const dependencyOf = (params: DependencyParams): PolicyTarget => ({
  namespace: params.ns,
  kind: 'dep',
  name: params.dep,
});
const limitOf = (params: LimitParams): PolicyTarget => ({ namespace: params.ns, kind: 'limit', name: params.limit });
const queueOf = (params: QueueParams): PolicyTarget => ({ namespace: params.ns, kind: 'queue', name: params.queue });
