import { Controller, Delete, HttpCode, Param, Post } from '@nestjs/common';
import { Matches } from 'class-validator';
import { DependencyParams } from '../common/params.dto';
import { LeasesService } from './leases.service';

export class LeaseParams extends DependencyParams {
  @Matches(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a lease id from admit' })
  id!: string;
}

@Controller('v1/:ns/deps/:dep/leases/:id')
export class LeasesController {
  constructor(private readonly leases: LeasesService) {}

  @Delete()
  @HttpCode(204)
  release(@Param() params: LeaseParams): Promise<void> {
    return this.leases.release({ namespace: params.ns, dependency: params.dep }, params.id);
  }

  @Post('renew')
  @HttpCode(200)
  renew(@Param() params: LeaseParams): Promise<{ expiresAt: number }> {
    return this.leases.renew({ namespace: params.ns, dependency: params.dep }, params.id);
  }
}
