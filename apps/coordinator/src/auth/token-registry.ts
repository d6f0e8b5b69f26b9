import { createHash, timingSafeEqual } from 'node:crypto';
import { HASHED_PREFIX, type TokenDefinition, type TokenRole } from '../config/tokens';

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

/** A configured secret's digest: given as `sha256:<hex>`, or computed from the plain secret. */
const storedDigest = (secret: string): Buffer =>
  secret.startsWith(HASHED_PREFIX) ? Buffer.from(secret.slice(HASHED_PREFIX.length), 'hex') : digest(secret);

type Entry = { digest: Buffer; principal: Principal };

/** The configured bearer tokens; secrets are compared as digests in constant time. */
export class TokenRegistry {
  private entries: Entry[];

  constructor(tokens: TokenDefinition[]) {
    this.entries = entriesOf(tokens);
  }

  /**
   * Puts `tokens` in place of the current ones, at once for every request that follows. An empty
   * list is refused: it would turn authentication off while the service listens beyond loopback.
   */
  replace(tokens: TokenDefinition[]): void {
    if (tokens.length === 0 && this.enabled) throw new Error('an empty token list would turn authentication off');
    this.entries = entriesOf(tokens);
  }

  /** The ids of the tokens in use. */
  get ids(): string[] {
    return this.entries.map((entry) => entry.principal.id);
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

function entriesOf(tokens: TokenDefinition[]): Entry[] {
  return tokens.map((token) => ({
    digest: storedDigest(token.secret),
    principal: { id: token.id, role: token.role, namespaces: token.namespaces },
  }));
}

export function mayTouchNamespace(principal: Principal, namespace: string): boolean {
  return principal.namespaces.includes('*') || principal.namespaces.includes(namespace);
}
