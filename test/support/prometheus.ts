import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/** One label matcher of a selector: `route=~"/v1/.*"`. */
export interface LabelMatcher {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

/** A vector selector in an expression: `sluice_breaker_state{state="open"}`. */
export interface Selector {
  metric: string;
  matchers: LabelMatcher[];
}

/** What an expression refers to: its selectors, and the labels named in by/without/on/ignoring/group_* clauses. */
export interface ExpressionReferences {
  selectors: Selector[];
  groupingLabels: string[];
}

const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'atan2']);
/** Aggregations may be followed by `by (...)` rather than by their parenthesis. */
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);

type Token = { kind: 'ident' | 'string' | 'number' | 'variable' | 'punct'; text: string };

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  const patterns: Array<[Token['kind'], RegExp]> = [
    ['string', /^"(?:[^"\\]|\\.)*"|^'(?:[^'\\]|\\.)*'|^`[^`]*`/],
    ['number', /^\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:ms|[smhdwy])*(?:\d+(?:ms|[smhdwy]))*/],
    ['variable', /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/],
    ['ident', /^[A-Za-z_:][A-Za-z0-9_:]*/],
    ['punct', /^(?:=~|!~|!=|==|>=|<=|[-+*/%^(){}[\],=<>:@])/],
  ];
  let rest = expression;
  while (rest.length > 0) {
    const space = /^(?:\s+|#[^\n]*)/.exec(rest);
    if (space) {
      rest = rest.slice(space[0].length);
      continue;
    }
    const match = patterns.map(([kind, pattern]) => [kind, pattern.exec(rest)] as const).find(([, m]) => m);
    if (!match || !match[1]) throw new Error(`cannot read PromQL at: ${rest.slice(0, 40)}`);
    tokens.push({ kind: match[0], text: match[1][0] });
    rest = rest.slice(match[1][0].length);
  }
  return tokens;
}

function unquote(text: string): string {
  if (text.startsWith('`')) return text.slice(1, -1);
  return text.slice(1, -1).replace(/\\(.)/g, '$1');
}

/**
 * The metric selectors and grouping labels of a PromQL expression. A small reader, not a full
 * parser: enough for the expressions of our rule files and dashboards (Grafana `$variables` are
 * skipped).
 */
export function readExpression(expression: string): ExpressionReferences {
  const tokens = tokenize(expression);
  const selectors: Selector[] = [];
  const groupingLabels: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind === 'punct' && token.text === '[') {
      while (i < tokens.length && tokens[i].text !== ']') i++;
      continue;
    }
    if (token.kind !== 'ident') continue;
    const next = tokens[i + 1];
    if (GROUPING.has(token.text)) {
      if (next?.text === '(') {
        for (i += 2; i < tokens.length && tokens[i].text !== ')'; i++) {
          if (tokens[i].kind === 'ident') groupingLabels.push(tokens[i].text);
        }
      }
      continue;
    }
    if (KEYWORDS.has(token.text.toLowerCase()) || AGGREGATIONS.has(token.text) || next?.text === '(') continue;
    const selector: Selector = { metric: token.text, matchers: [] };
    if (next?.text === '{') {
      for (i += 2; i < tokens.length && tokens[i].text !== '}'; i++) {
        if (tokens[i].kind !== 'ident') continue;
        const [op, value] = [tokens[i + 1], tokens[i + 2]];
        if (!op || !value || value.kind !== 'string') throw new Error(`bad matcher in ${expression}`);
        selector.matchers.push({
          label: tokens[i].text,
          op: op.text as LabelMatcher['op'],
          value: unquote(value.text),
        });
        i += 2;
      }
    }
    selectors.push(selector);
  }
  return { selectors, groupingLabels };
}

/** Whether a series' labels satisfy a matcher; regular expressions are anchored, as in Prometheus. */
export function matches(labels: Record<string, string>, matcher: LabelMatcher): boolean {
  const value = labels[matcher.label] ?? '';
  switch (matcher.op) {
    case '=':
      return value === matcher.value;
    case '!=':
      return value !== matcher.value;
    case '=~':
      return new RegExp(`^(?:${matcher.value})$`).test(value);
    case '!~':
      return !new RegExp(`^(?:${matcher.value})$`).test(value);
  }
}

export interface PrometheusRule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RuleFile {
  groups: Array<{ name: string; rules: PrometheusRule[] }>;
}

export function readRuleFile(path: string): RuleFile {
  return parse(readFileSync(path, 'utf8')) as RuleFile;
}

/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Samples of a text exposition, and the metric families it declares (`# TYPE name type`). */
export function parseExposition(text: string): { samples: Sample[]; families: Map<string, string> } {
  const samples: Sample[] = [];
  const families = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) families.set(type[1], type[2]);
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!sample) throw new Error(`cannot read exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, label, value] of (sample[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label] = value.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
    }
    samples.push({ name: sample[1], labels, value: Number(sample[3]) });
  }
  return { samples, families };
}

const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

/** Runs promtool; throws a clear error when it is not installed. */
export function promtool(args: string[], cwd?: string): { status: number; output: string } {
  const result = spawnSync(PROMTOOL, args, { cwd, encoding: 'utf8', timeout: 60_000 });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error(
      `promtool not found (looked for "${PROMTOOL}"): install it with \`apt-get install -y prometheus\` ` +
        `(Debian's package ships /usr/bin/promtool; .ci/run does this), or set PROMTOOL to its path`,
    );
  }
  if (result.error) throw result.error;
  return { status: result.status ?? -1, output: `${result.stdout}${result.stderr}` };
}
