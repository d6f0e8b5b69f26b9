import { Controller, Delete, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Matches } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { LEASE_ID_PATTERN, type LeaseRenewal } from '@sluice/protocol';
import { DependencyParams } from '../common/params.dto';
import { ClientRoute } from '../http/routes';
import { notFound } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { LeasesService } from './leases.service';

export class LeaseParams extends DependencyParams {
  @Matches(LEASE_ID_PATTERN, { message: 'must be a lease id from admit' })
  @JSONSchema({ description: 'A lease id from POST …/admit (`lease.id`, a UUID).' })
  id!: string;
}

const LEASE_NOT_FOUND = notFound(
  'No such lease: unknown, already released, expired, or the policy has no concurrency limit.',
);

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/deps/:dep/leases/:id')
export class LeasesController {
  constructor(private readonly leases: LeasesService) {}

  @Delete()
  @HttpCode(204)
  @ClientRoute({
    operationId: 'releaseLease',
    summary: 'Release a concurrency lease',
    description: 'Frees the lease\u2019s place under the concurrency limit: call it when the admitted call ends.',
    responses: [{ status: 204, description: 'Released.' }],
    errors: [LEASE_NOT_FOUND],
  })
  release(@Param() params: LeaseParams): Promise<void> {
    return this.leases.release({ namespace: params.ns, dependency: params.dep }, params.id);
  }

  @Post('renew')
  @HttpCode(200)
  @ClientRoute({
    operationId: 'renewLease',
    summary: 'Extend a concurrency lease',
    description:
      'Extends a lease still held by the policy\u2019s `concurrency.leaseMs` from now, for a call that runs ' +
      'longer than the lease. A lease that expired has lost its place: the call should be admitted again.',
    responses: [{ status: 200, description: 'The lease\u2019s new expiry.', schema: 'LeaseRenewal' }],
    errors: [LEASE_NOT_FOUND],
  })
  renew(@Param() params: LeaseParams): Promise<LeaseRenewal> {
    return this.leases.renew({ namespace: params.ns, dependency: params.dep }, params.id);
  }
}
