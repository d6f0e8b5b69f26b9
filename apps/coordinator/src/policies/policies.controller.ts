import { Body, Controller, Delete, Get, HttpCode, Param, Put, Query, UseInterceptors } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { PolicyDocumentPage } from '@sluice/protocol';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { DependencyParams, LimitParams, NamespaceParams, QueueParams } from '../common/params.dto';
import { AdminRoute } from '../http/routes';
import { policyRoutes } from '../openapi/policy-routes';
import { TAGS } from '../openapi/tags';
import { PolicyAdminService } from './policy-admin.service';
import { DependencyPolicyDto, QueuePolicyDto, NamedLimitPolicyDto } from './policy.dto';
import { PolicyDocumentInterceptor } from './policy-document.interceptor';
import { WritePrecondition, type Precondition } from './policy-preconditions';
import type { PolicyTarget, VersionedPolicy } from './policy-target';
import { PolicyChangeQuery, PolicyPageQuery } from './policies.dto';

const DEFAULT = policyRoutes({
  name: 'DefaultPolicy',
  what: 'the namespace default',
  schema: 'DependencyPolicyDto',
  description:
    'The namespace\u2019s default dependency policy: every dependency of the namespace overlays its own document ' +
    'on it. Omitted fields take the policies file\u2019s default, or the built-in defaults.',
  rules: '`backoff.capMs` ≥ `backoff.baseMs`, `breaker.maxOpenMs` ≥ `breaker.openMs`',
});
const DEPENDENCY = policyRoutes({
  name: 'DependencyPolicy',
  what: 'a dependency\u2019s policy',
  schema: 'DependencyPolicyDto',
  description:
    'The dependency\u2019s own policy document, overlaid on the namespace default (omitted fields take its ' +
    'values). The policy in effect is in GET /v1/{ns}/deps/{dep}.',
  rules: '`backoff.capMs` ≥ `backoff.baseMs`, `breaker.maxOpenMs` ≥ `breaker.openMs`',
  newDependency: true,
});
const LIMIT = policyRoutes({
  name: 'LimitPolicy',
  what: 'a named limit',
  schema: 'NamedLimitPolicyDto',
  description:
    'A named rate limit (POST /v1/{ns}/limits/{limit}/take): `rate` per `periodMs`, up to `burst` at once, per ' +
    'key; `mode: shadow` counts denials without enforcing them. A limit without a document is undefined.',
});
const QUEUE = policyRoutes({
  name: 'QueuePolicy',
  what: 'a queue\u2019s policy',
  schema: 'QueuePolicyDto',
  description:
    'A queue\u2019s delivery policy: `maxAttempts` before a message is dead-lettered (every delivery counts, the ' +
    'first included) and the `backoff` between deliveries. Omitted fields take the defaults.',
  rules: '`backoff.capMs` ≥ `backoff.baseMs`',
});

/**
 * Policy documents: a namespace's default, and one per dependency, named limit or queue.
 * GET answers the stored document with `ETag: "<version>"`; PUT stores a validated document and
 * answers it with its new ETag; DELETE answers 204. PUT and DELETE honour `If-Match` (`"<version>"`
 * or `*`; 412 precondition_failed when it does not hold) and `If-None-Match: *` (create only), and
 * take `?reason=` for the audit log.
 */
@ApiTags(TAGS.policiesAdmin.name)
@UseInterceptors(PolicyDocumentInterceptor)
@Controller('admin/v1/:ns/policies')
export class PoliciesController {
  constructor(private readonly policies: PolicyAdminService) {}

  @Get()
  @AdminRoute({
    operationId: 'listPolicies',
    summary: 'List the namespace\u2019s policy documents',
    description:
      'Every stored document of the namespace (its default, and those of its dependencies, named limits and ' +
      'queues) with its `ETag`, ordered by `target`, a page at a time: pass the answer\u2019s `next` as `cursor` ' +
      'for the next page. A page is read as one snapshot; a document changed between pages is seen as it is ' +
      'when its page is read. Dependencies that follow the defaults have no document.',
    responses: [{ status: 200, description: 'A page of documents.', schema: 'PolicyDocumentPage' }],
  })
  list(@Param() params: NamespaceParams, @Query() query: PolicyPageQuery): Promise<PolicyDocumentPage> {
    return this.policies.list(params.ns, query);
  }

  @Get('default')
  @DEFAULT.read
  readDefault(@Param() params: NamespaceParams): Promise<VersionedPolicy> {
    return this.policies.read(defaultOf(params));
  }

  @Put('default')
  @DEFAULT.put
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
  @DEFAULT.remove
  deleteDefault(
    @Param() params: NamespaceParams,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<void> {
    return this.policies.remove(defaultOf(params), { actor, precondition, reason: query.reason });
  }

  @Get('deps/:dep')
  @DEPENDENCY.read
  readDependency(@Param() params: DependencyParams): Promise<VersionedPolicy> {
    return this.policies.read(dependencyOf(params));
  }

  @Put('deps/:dep')
  @DEPENDENCY.put
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
  @DEPENDENCY.remove
  deleteDependency(
    @Param() params: DependencyParams,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<void> {
    return this.policies.remove(dependencyOf(params), { actor, precondition, reason: query.reason });
  }

  @Get('limits/:limit')
  @LIMIT.read
  readLimit(@Param() params: LimitParams): Promise<VersionedPolicy> {
    return this.policies.read(limitOf(params));
  }

  @Put('limits/:limit')
  @LIMIT.put
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
  @LIMIT.remove
  deleteLimit(
    @Param() params: LimitParams,
    @Query() query: PolicyChangeQuery,
    @Actor() actor: Principal,
    @WritePrecondition() precondition: Precondition,
  ): Promise<void> {
    return this.policies.remove(limitOf(params), { actor, precondition, reason: query.reason });
  }

  @Get('queues/:queue')
  @QUEUE.read
  readQueue(@Param() params: QueueParams): Promise<VersionedPolicy> {
    return this.policies.read(queueOf(params));
  }

  @Put('queues/:queue')
  @QUEUE.put
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
  @QUEUE.remove
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
