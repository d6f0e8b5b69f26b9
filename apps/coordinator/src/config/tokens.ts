import { plainToInstance } from 'class-transformer';
import { ArrayMinSize, IsArray, IsIn, IsString, Matches, MaxLength, MinLength, validateSync } from 'class-validator';
import { readFileSync } from 'node:fs';
import { ConfigError } from './config-error';
import { flattenValidationErrors } from './validation-messages';

export type TokenRole = 'client' | 'admin';

export interface TokenDefinition {
  id: string;
  /**
   * The bearer secret, or its SHA-256 digest as `sha256:<64 hex digits>` (`sluice token hash`
   * makes one), so the file need not hold the secret itself.
   */
  secret: string;
  role: TokenRole;
  /** Namespaces the token may touch; `*` is every namespace. */
  namespaces: string[];
}

class TokenDefinitionDto implements TokenDefinition {
  @IsString({ message: 'must be a string' })
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, { message: 'must be 1 to 64 of A-Z a-z 0-9 . _ -' })
  id!: string;

  @IsString({ message: 'must be a string' })
  @MinLength(16, { message: 'must be at least 16 characters' })
  @MaxLength(512, { message: 'must be at most 512 characters' })
  secret!: string;

  @IsIn(['client', 'admin'], { message: 'must be client or admin' })
  role!: TokenRole;

  @IsArray({ message: 'must be a list of namespaces' })
  @ArrayMinSize(1, { message: 'must list at least one namespace' })
  @Matches(/^(\*|[a-z0-9][a-z0-9._-]{0,127})$/, {
    each: true,
    message: 'must hold namespace names (^[a-z0-9][a-z0-9._-]{0,127}$) or *',
  })
  namespaces!: string[];
}

/** A secret stored as its digest: `sha256:` and 64 hex digits. */
export const HASHED_PREFIX = 'sha256:';
export const HASHED_SECRET = /^sha256:[0-9a-f]{64}$/i;

/** Parses and validates a JSON array of token definitions. */
export function parseTokens(json: string, variable: string): TokenDefinition[] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new ConfigError(variable, `is not valid JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(raw)) throw new ConfigError(variable, 'must be a JSON array of tokens');
  const problems: string[] = [];
  const tokens: TokenDefinition[] = [];
  raw.forEach((entry: unknown, index) => {
    const token = plainToInstance(TokenDefinitionDto, entry);
    const found = flattenValidationErrors(validateSync(token, { whitelist: true, forbidNonWhitelisted: true }));
    const name = typeof token?.id === 'string' ? ` ("${token.id}")` : '';
    // One message per field: the first check that failed says what the field must be.
    const fields = new Map<string, string>();
    for (const problem of found) {
      const message = /^property .* should not exist$/.test(problem.message) ? 'is not a known field' : problem.message;
      if (!fields.has(problem.field)) fields.set(problem.field, message);
    }
    if (!fields.has('secret') && typeof token.secret === 'string' && token.secret.startsWith(HASHED_PREFIX)) {
      if (!HASHED_SECRET.test(token.secret)) {
        fields.set('secret', 'must be sha256: and 64 hex digits when hashed (sluice token hash makes one)');
      }
    }
    for (const [field, message] of fields) problems.push(`token ${index}${name}: ${field} ${message}`);
    if (found.length === 0) {
      tokens.push({ id: token.id, secret: token.secret, role: token.role, namespaces: [...token.namespaces] });
    }
  });
  const ids = new Set<string>();
  for (const token of tokens) {
    if (ids.has(token.id)) problems.push(`token id "${token.id}" appears twice`);
    ids.add(token.id);
  }
  if (problems.length > 0) throw new ConfigError(problems.map((message) => ({ variable, message })));
  return tokens;
}

export function readTokensFile(path: string, variable: string): TokenDefinition[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(variable, `cannot read ${path} (${(error as Error).message})`);
  }
  return parseTokens(text, variable);
}
