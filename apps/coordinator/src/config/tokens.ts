import { plainToInstance } from 'class-transformer';
import { ArrayMinSize, IsArray, IsIn, IsString, Matches, MaxLength, MinLength, validateSync } from 'class-validator';
import { readFileSync } from 'node:fs';
import { ConfigError } from './config-error';
import { flattenValidationErrors } from './validation-messages';

export type TokenRole = 'client' | 'admin';

export interface TokenDefinition {
  id: string;
  secret: string;
  role: TokenRole;
  /** Namespaces the token may touch; `*` is every namespace. */
  namespaces: string[];
}

class TokenDefinitionDto implements TokenDefinition {
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{1,64}$/)
  id!: string;

  @IsString()
  @MinLength(16)
  @MaxLength(512)
  secret!: string;

  @IsIn(['client', 'admin'])
  role!: TokenRole;

  @IsArray()
  @ArrayMinSize(1)
  @Matches(/^(\*|[a-z0-9][a-z0-9._-]{0,127})$/, { each: true })
  namespaces!: string[];
}

/** Parses and validates a JSON array of token definitions. */
export function parseTokens(json: string, variable: string): TokenDefinition[] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new ConfigError(variable, `is not valid JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(raw)) throw new ConfigError(variable, 'must be a JSON array of tokens');
  const tokens = raw.map((entry, index) => {
    const token = plainToInstance(TokenDefinitionDto, entry);
    const problems = flattenValidationErrors(validateSync(token, { whitelist: true, forbidNonWhitelisted: true }));
    if (problems.length > 0) {
      throw new ConfigError(variable, `token ${index}: ${problems[0].field} ${problems[0].message}`);
    }
    return { id: token.id, secret: token.secret, role: token.role, namespaces: [...token.namespaces] };
  });
  const ids = new Set<string>();
  for (const token of tokens) {
    if (ids.has(token.id)) throw new ConfigError(variable, `token id "${token.id}" appears twice`);
    ids.add(token.id);
  }
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
