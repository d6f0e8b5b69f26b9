import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, validateSync } from 'class-validator';
import { applyDecorators } from '@nestjs/common';
import { DURABILITIES, splitHostPort, type Durability } from '@sluice/store';
import { ConfigError, type ConfigProblem } from './config-error';
import { parseTokens, readTokensFile, type TokenDefinition } from './tokens';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** `json`: one JSON object a line, for log collectors (the default); `pretty`: one readable line, for a terminal. */
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** The service's configuration, validated at boot. */
export interface SluiceConfig {
  port: number;
  host: string;
  /** Unset with no cluster nodes: the embedded single-process store. */
  redisUrl?: string;
  redisClusterNodes?: string[];
  tokens: TokenDefinition[];
  /** Where the tokens came from when a file: reloaded on SIGHUP and when it changes. */
  tokensFile?: string;
  policiesFile?: string;
  storeTimeoutMs: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  maxDependenciesPerNamespace: number;
  /** First part of every Redis key; lets several deployments share one Redis. */
  keyPrefix: string;
  /** Longest silence on an event stream before a comment line keeps it alive. */
  sseHeartbeatMs: number;
  /** Most distinct namespaces the store holds state for; 0: no cap. */
  maxNamespaces: number;
  /** Past this event-loop delay (mean over a sample), client requests are shed as `overloaded`; 0: never. */
  maxEventLoopDelayMs: number;
  /** Past this many client requests in progress, more are shed as `overloaded`; 0: no cap. */
  maxInFlight: number;
  /** Which idempotency completions wait for a replica: `auto` (unset) those whose shard has one. */
  durability?: Durability;
  /** PEM certificate chain and key: the service then speaks HTTPS only. */
  tls?: { cert: string; key: string };
}

/** A whole number in [min, max], said the same way whichever check fails (`abc`, `-1`, `1.5`, `70000`). */
function WholeNumber(min: number, max: number): PropertyDecorator {
  const message = `must be a whole number from ${min} to ${max}`;
  return applyDecorators(IsInt({ message }), Min(min, { message }), Max(max, { message }));
}

/** The environment as class-validator sees it: property names are the variables' names. */
class Environment {
  @IsOptional()
  @WholeNumber(0, 65535)
  SLUICE_PORT?: number;

  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9.:[\]-]+$/, { message: 'must be a host name or an IP address' })
  SLUICE_HOST?: string;

  @IsOptional()
  @IsString()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL' })
  SLUICE_REDIS_URL?: string;

  @IsOptional()
  @IsString()
  SLUICE_REDIS_CLUSTER_NODES?: string;

  @IsOptional()
  @IsString()
  SLUICE_TOKENS?: string;

  @IsOptional()
  @IsString()
  SLUICE_TOKENS_FILE?: string;

  @IsOptional()
  @IsString()
  SLUICE_POLICIES_FILE?: string;

  @IsOptional()
  @WholeNumber(1, 60000)
  SLUICE_STORE_TIMEOUT_MS?: number;

  @IsOptional()
  @IsIn(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` })
  SLUICE_LOG_LEVEL?: LogLevel;

  @IsOptional()
  @IsIn(LOG_FORMATS, { message: `must be one of ${LOG_FORMATS.join(', ')}` })
  SLUICE_LOG_FORMAT?: LogFormat;

  @IsOptional()
  @WholeNumber(1, 1_000_000)
  SLUICE_MAX_DEPENDENCIES_PER_NAMESPACE?: number;

  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_.:-]{1,64}$/, { message: 'must be 1 to 64 of A-Z a-z 0-9 _ . : -' })
  SLUICE_KEY_PREFIX?: string;

  @IsOptional()
  @WholeNumber(100, 60_000)
  SLUICE_SSE_HEARTBEAT_MS?: number;

  @IsOptional()
  @WholeNumber(0, 1_000_000)
  SLUICE_MAX_NAMESPACES?: number;

  @IsOptional()
  @WholeNumber(0, 60_000)
  SLUICE_MAX_EVENT_LOOP_DELAY_MS?: number;

  @IsOptional()
  @WholeNumber(0, 1_000_000)
  SLUICE_MAX_IN_FLIGHT?: number;

  @IsOptional()
  @IsString()
  SLUICE_TLS_CERT_FILE?: string;

  @IsOptional()
  @IsString()
  SLUICE_TLS_KEY_FILE?: string;

  @IsOptional()
  @IsIn(DURABILITIES, { message: `must be one of ${DURABILITIES.join(', ')}` })
  SLUICE_DURABILITY?: Durability;
}

const VARIABLE_NAMES = [
  'SLUICE_PORT',
  'SLUICE_HOST',
  'SLUICE_REDIS_URL',
  'SLUICE_REDIS_CLUSTER_NODES',
  'SLUICE_TOKENS',
  'SLUICE_TOKENS_FILE',
  'SLUICE_POLICIES_FILE',
  'SLUICE_STORE_TIMEOUT_MS',
  'SLUICE_LOG_LEVEL',
  'SLUICE_LOG_FORMAT',
  'SLUICE_MAX_DEPENDENCIES_PER_NAMESPACE',
  'SLUICE_KEY_PREFIX',
  'SLUICE_SSE_HEARTBEAT_MS',
  'SLUICE_MAX_NAMESPACES',
  'SLUICE_MAX_EVENT_LOOP_DELAY_MS',
  'SLUICE_MAX_IN_FLIGHT',
  'SLUICE_DURABILITY',
  'SLUICE_TLS_CERT_FILE',
  'SLUICE_TLS_KEY_FILE',
] as const;
const INTEGER_VARIABLES = [
  'SLUICE_PORT',
  'SLUICE_STORE_TIMEOUT_MS',
  'SLUICE_MAX_DEPENDENCIES_PER_NAMESPACE',
  'SLUICE_SSE_HEARTBEAT_MS',
  'SLUICE_MAX_NAMESPACES',
  'SLUICE_MAX_EVENT_LOOP_DELAY_MS',
  'SLUICE_MAX_IN_FLIGHT',
] as const;
const LOOPBACK = '127.0.0.1';

/** Reads and validates the configuration; throws one ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): SluiceConfig {
  const plain: Record<string, unknown> = {};
  for (const name of VARIABLE_NAMES) {
    const value = env[name];
    if (value !== undefined && value !== '') plain[name] = value;
  }
  for (const name of INTEGER_VARIABLES) {
    if (plain[name] !== undefined) {
      const text = String(plain[name]).trim();
      plain[name] = /^-?\d+$/.test(text) ? Number(text) : text;
    }
  }
  const environment = plainToInstance(Environment, plain);
  const problems: ConfigProblem[] = validateSync(environment).map((error) => ({
    variable: error.property,
    // One message per variable: the checks of one variable say the same thing, or the first does.
    message: Object.values(error.constraints ?? {})[0] ?? 'is invalid',
  }));
  const bad = new Set(problems.map((problem) => problem.variable));
  const collect = <T>(variable: string, read: () => T): T | undefined => {
    if (bad.has(variable)) return undefined;
    try {
      return read();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems);
      return undefined;
    }
  };
  if (environment.SLUICE_TOKENS && environment.SLUICE_TOKENS_FILE) {
    problems.push({
      variable: 'SLUICE_TOKENS_FILE',
      message: 'set either SLUICE_TOKENS or SLUICE_TOKENS_FILE, not both',
    });
  }
  const tokens =
    (environment.SLUICE_TOKENS
      ? collect('SLUICE_TOKENS', () => parseTokens(environment.SLUICE_TOKENS as string, 'SLUICE_TOKENS'))
      : environment.SLUICE_TOKENS_FILE
        ? collect('SLUICE_TOKENS_FILE', () =>
            readTokensFile(environment.SLUICE_TOKENS_FILE as string, 'SLUICE_TOKENS_FILE'),
          )
        : []) ?? [];
  const redisClusterNodes = collect('SLUICE_REDIS_CLUSTER_NODES', () =>
    parseClusterNodes(environment.SLUICE_REDIS_CLUSTER_NODES),
  );
  const tls = collect('SLUICE_TLS_CERT_FILE', () =>
    readTls(environment.SLUICE_TLS_CERT_FILE, environment.SLUICE_TLS_KEY_FILE),
  );
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    port: environment.SLUICE_PORT ?? 8080,
    host: environment.SLUICE_HOST ?? (tokens.length > 0 ? '0.0.0.0' : LOOPBACK),
    redisUrl: environment.SLUICE_REDIS_URL,
    redisClusterNodes,
    tokens,
    tokensFile: environment.SLUICE_TOKENS_FILE,
    policiesFile: environment.SLUICE_POLICIES_FILE,
    storeTimeoutMs: environment.SLUICE_STORE_TIMEOUT_MS ?? 50,
    logLevel: environment.SLUICE_LOG_LEVEL ?? 'info',
    logFormat: environment.SLUICE_LOG_FORMAT ?? 'json',
    maxDependenciesPerNamespace: environment.SLUICE_MAX_DEPENDENCIES_PER_NAMESPACE ?? 1000,
    keyPrefix: environment.SLUICE_KEY_PREFIX ?? 'sluice',
    sseHeartbeatMs: environment.SLUICE_SSE_HEARTBEAT_MS ?? 15_000,
    maxNamespaces: environment.SLUICE_MAX_NAMESPACES ?? 1000,
    maxEventLoopDelayMs: environment.SLUICE_MAX_EVENT_LOOP_DELAY_MS ?? 1000,
    maxInFlight: environment.SLUICE_MAX_IN_FLIGHT ?? 5000,
    durability: environment.SLUICE_DURABILITY ?? 'auto',
    ...(tls ? { tls } : {}),
  };
}

/** The certificate and key files, both or neither, each a PEM file that reads. */
function readTls(certFile: string | undefined, keyFile: string | undefined): SluiceConfig['tls'] {
  if (!certFile && !keyFile) return undefined;
  if (!certFile) throw new ConfigError('SLUICE_TLS_CERT_FILE', 'is required with SLUICE_TLS_KEY_FILE');
  if (!keyFile) throw new ConfigError('SLUICE_TLS_KEY_FILE', 'is required with SLUICE_TLS_CERT_FILE');
  const problems: ConfigProblem[] = [];
  const read = (variable: string, path: string, what: string, label: RegExp): string => {
    try {
      const text = readFileSync(path, 'utf8');
      if (!label.test(text)) problems.push({ variable, message: `${path} holds no PEM ${what}` });
      return text;
    } catch (error) {
      problems.push({ variable, message: `cannot read ${path} (${(error as Error).message})` });
      return '';
    }
  };
  const cert = read('SLUICE_TLS_CERT_FILE', certFile, 'certificate', /-----BEGIN [A-Z ]*CERTIFICATE-----/);
  const key = read('SLUICE_TLS_KEY_FILE', keyFile, 'private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/);
  if (problems.length > 0) throw new ConfigError(problems);
  return { cert, key };
}

function parseClusterNodes(value: string | undefined): string[] | undefined {
  if (!value) return undefined;
  const nodes = value
    .split(',')
    .map((node) => node.trim())
    .filter(Boolean);
  for (const node of nodes) {
    try {
      splitHostPort(node);
    } catch (error) {
      throw new ConfigError('SLUICE_REDIS_CLUSTER_NODES', (error as Error).message);
    }
  }
  if (nodes.length === 0) throw new ConfigError('SLUICE_REDIS_CLUSTER_NODES', 'lists no host:port');
  return nodes;
}

/** True when the configured host only listens on this machine. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || host.startsWith('127.');
}
