/**
 * Every Redis key Sluice uses is built here. All keys of one resource share a hash tag, so each
 * script touches one slot and runs unchanged on Redis Cluster.
 */
export interface DependencyKeys {
  /** Hash: sliding window of first attempts and granted retries. */
  budget: string;
  /** Hash: sliding window of call outcomes (successes, failures, slow calls). */
  outcomes: string;
}

export interface NamespaceKeys {
  /** Sorted set: dependencies seen in the namespace, scored by last use (epoch ms). */
  dependencies: string;
}

export class SluiceKeys {
  constructor(readonly prefix = 'sluice') {}

  dependency(namespace: string, dependency: string): DependencyKeys {
    const tagged = `${this.prefix}:{${namespace}/${dependency}}`;
    return { budget: `${tagged}:budget`, outcomes: `${tagged}:outcomes` };
  }

  namespace(namespace: string): NamespaceKeys {
    return { dependencies: `${this.prefix}:{${namespace}}:deps` };
  }
}
