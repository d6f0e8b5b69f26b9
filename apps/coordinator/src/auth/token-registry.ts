import { createHash, timingSafeEqual } from 'node:crypto';
import type { TokenDefinition, TokenRole } from '../config/tokens';

/** Who made a request: a configured token, or the open mode when no tokens are configured. */
export interface Principal {
  id: string;
  role: TokenRole;
  namespaces: string[];
}

/** Everyone is an admin of every namespace when authentication is off. */
export const OPEN_MODE_PRINCIPAL: Principal = Object.freeze({
  id: 'anonymous',
  role: 'admin',
  namespaces: ['*'],
}) as Principal;

const digest = (secret: string): Buffer => createHash('sha256').update(secret).digest();

/** The configured bearer tokens; secrets are compared as digests in constant time. */
export class TokenRegistry {
  private readonly entries: Array<{ digest: Buffer; principal: Principal }>;

  constructor(tokens: TokenDefinition[]) {
    this.entries = tokens.map((token) => ({
      digest: digest(token.secret),
      principal: { id: token.id, role: token.role, namespaces: token.namespaces },
    }));
  }

  get enabled(): boolean {
    return this.entries.length > 0;
  }

  /** The token's principal, or undefined. Every entry is compared, so timing says nothing. */
  authenticate(secret: string): Principal | undefined {
    const presented = digest(secret);
    let found: Principal | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, presented)) found = entry.principal;
    }
    return found;
  }
}

export function mayTouchNamespace(principal: Principal, namespace: string): boolean {
  return principal.namespaces.includes('*') || principal.namespaces.includes(namespace);
}
