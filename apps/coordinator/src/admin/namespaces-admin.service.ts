import { Inject, Injectable } from '@nestjs/common';
import type { NamespaceItem } from '@sluice/protocol';
import type { Store } from '@sluice/store';
import { mayTouchNamespace, type Principal } from '../auth/token-registry';
import { REGISTRY_RETENTION_MS } from '../dependencies/dependency-registry.service';
import { NAMESPACE_RETENTION_MS } from '../store/namespace-cap';
import { STORE } from '../store/store.provider';
import { readInBatches } from './read-in-batches';

/**
 * The namespaces that hold state or policies, as an operator may see them: those the token covers,
 * each with its number of dependencies. Bounded: the deployment caps its namespaces
 * (SLUICE_MAX_NAMESPACES), and each costs one store call.
 */
@Injectable()
export class NamespacesAdminService {
  constructor(@Inject(STORE) private readonly store: Store) {}

  async list(principal: Principal): Promise<NamespaceItem[]> {
    const namespaces = await this.store.listNamespaces(NAMESPACE_RETENTION_MS);
    const visible = namespaces.filter((namespace) => mayTouchNamespace(principal, namespace));
    return readInBatches(visible, async (namespace) => ({
      namespace,
      dependencies: await this.store.countDependencies(namespace, REGISTRY_RETENTION_MS),
    }));
  }
}
