import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

// libs/protocol is the one owner of every wire shape: what the service answers and accepts, and what
// the SDK sends and reads. The rules, checked on the source:
//
// 1. Names. An exported interface or type alias of the service (apps/coordinator/src) or of the SDK
//    (libs/client/src) whose name ends with one of WIRE_SUFFIXES is a wire shape, and wire shapes are
//    declared in libs/protocol only. The few such names that are not wire shapes are listed in
//    NOT_WIRE_SHAPES, each with the reason.
// 2. Answers. The return type of every route handler (a method of a @Controller class with an HTTP
//    method decorator), its Promise unwrapped, is void, a string (text bodies), or made of named types
//    declared in libs/protocol (unions member by member): no inline object type, no type of the service
//    or of the store served as is. TRANSPORT_WRAPPERS lists the classes an interceptor unwraps.
// 3. Documented answers. Every response schema of the OpenAPI document (openapi/schemas.ts,
//    ResponseComponents) describes a type declared in libs/protocol.
// 4. Requests. The class of every @Body() parameter of a route handler implements a type declared in
//    libs/protocol: the DTO adds validation to the protocol's shape, it does not make up its own.
// 4b. Same shape. Every class of the service that implements a type of libs/protocol (the DTOs, nested
//    ones included) has exactly that type's properties, each optional where the type's is: `implements`
//    alone lets a DTO leave out an optional field, which `additionalProperties: false` would then refuse.
// 4c. One description. A request field is described once, in its DTO's decorators (`@JSONSchema`,
//    `@CallerChosenId`), which the OpenAPI document and its readers see: no TSDoc on a DTO's properties
//    or on the properties of the libs/protocol type it implements.
// 5. Plain. libs/protocol imports nothing but its own files: no framework, no decorators.

const ROOT = join(__dirname, '../..');
const PROTOCOL = join(ROOT, 'libs/protocol/src');
const SIDES = ['apps/coordinator/src', 'libs/client/src'];
const WIRE_SUFFIXES = ['Request', 'Response', 'Decision', 'View', 'Item', 'Event', 'Body', 'Page', 'List', 'Log'];
const WIRE_NAME = new RegExp(`(?:${WIRE_SUFFIXES.join('|')})$`);

/** Exported names that end like a wire shape but never cross the wire, and why. */
const NOT_WIRE_SHAPES: Record<string, string> = {
  'apps/coordinator/src/auth/auth.guard.ts AuthenticatedRequest': 'the framework request with its principal',
  'libs/client/src/events.ts Event': 'the SDK\u2019s listener registration function (cockatiel style)',
  'libs/client/src/policy-events.ts RetryEvent': 'an in-process SDK event (onRetry), never sent',
  'libs/client/src/policy-events.ts GiveUpEvent': 'an in-process SDK event (onGiveUp), never sent',
  'libs/client/src/fleet/coordinator-link.ts ConfigErrorEvent': 'an in-process SDK event (onConfigError), never sent',
  'libs/client/src/decide/decider.ts NoDecision': 'the SDK\u2019s own answer when nobody may decide, never sent',
  'libs/client/src/idempotency/fastify.ts FastifyLikeRequest': 'a structural view of a Fastify request',
  'libs/client/src/idempotency/engine.ts IdempotencyDecision': 'the server middleware\u2019s local decision',
};

/** Classes a route may return because an interceptor sends something else: the document as stored. */
const TRANSPORT_WRAPPERS: Record<string, string> = {
  VersionedPolicy: 'PolicyDocumentInterceptor sends its document (validated by a policy DTO) with its ETag',
};

const HTTP_METHODS = new Set(['Get', 'Post', 'Put', 'Delete', 'Patch', 'Head', 'Options', 'All']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(entry.name) && !/\.(spec|test)\.ts$/.test(entry.name) ? [path] : [];
  });
}

const repoPath = (file: string) => relative(ROOT, file).split(sep).join('/');
const inProtocol = (file: string) => repoPath(file).startsWith('libs/protocol/src/');
const isExported = (node: ts.Node) =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

function program(): ts.Program {
  const configFile = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, ROOT);
  const roots = SIDES.flatMap((side) => sourceFiles(join(ROOT, side)));
  return ts.createProgram(roots, { ...parsed.options, noEmit: true });
}

describe('wire types: libs/protocol owns every wire shape', () => {
  let prog: ts.Program;
  let checker: ts.TypeChecker;

  beforeAll(() => {
    prog = program();
    checker = prog.getTypeChecker();
  });

  const filesOf = (side: string) =>
    prog.getSourceFiles().filter((file) => repoPath(file.fileName).startsWith(`${side}/`));

  it('declares no exported wire-shaped interface or type outside libs/protocol', () => {
    const found: string[] = [];
    for (const side of SIDES) {
      for (const file of filesOf(side)) {
        if (/\.(spec|test)\.ts$/.test(file.fileName)) continue;
        for (const statement of file.statements) {
          if (!ts.isInterfaceDeclaration(statement) && !ts.isTypeAliasDeclaration(statement)) continue;
          if (!isExported(statement) || !WIRE_NAME.test(statement.name.text)) continue;
          const id = `${repoPath(file.fileName)} ${statement.name.text}`;
          if (!NOT_WIRE_SHAPES[id]) found.push(id);
        }
      }
    }
    expect(found).toEqual([]);
  });

  /** Calls `each` with every route handler of the service. */
  function forEachRoute(each: (where: string, member: ts.MethodDeclaration) => void): void {
    for (const file of filesOf('apps/coordinator/src')) {
      ts.forEachChild(file, function visit(node) {
        if (ts.isClassDeclaration(node) && decoratorNames(node).includes('Controller')) {
          for (const member of node.members) {
            if (!ts.isMethodDeclaration(member) || !decoratorNames(member).some((name) => HTTP_METHODS.has(name)))
              continue;
            each(`${repoPath(file.fileName)} ${node.name?.text}.${(member.name as ts.Identifier).text}`, member);
          }
        }
        ts.forEachChild(node, visit);
      });
    }
  }

  it('answers every route with void, text or named types of libs/protocol', () => {
    const found: string[] = [];
    forEachRoute((where, member) => {
      const signature = checker.getSignatureFromDeclaration(member);
      const problems = signature ? servedProblems(checker, unwrapPromise(checker, signature.getReturnType())) : [];
      for (const problem of problems) found.push(`${where}: ${problem}`);
    });
    expect(found).toEqual([]);
  });

  it('takes every request body as a DTO implementing a type of libs/protocol', () => {
    const found: string[] = [];
    forEachRoute((where, member) => {
      for (const parameter of member.parameters) {
        if (!decoratorNames(parameter).includes('Body')) continue;
        const symbol = checker.getTypeAtLocation(parameter).getSymbol();
        const declaration = symbol?.getDeclarations()?.find(ts.isClassDeclaration);
        const implemented = (declaration?.heritageClauses ?? [])
          .filter((clause) => clause.token === ts.SyntaxKind.ImplementsKeyword)
          .flatMap((clause) => clause.types)
          .map((type) => checker.getTypeAtLocation(type))
          .filter((type) => servedProblems(checker, type).length === 0);
        if (implemented.length === 0) found.push(`${where}: ${symbol?.getName()} implements no type of libs/protocol`);
      }
    });
    expect(found).toEqual([]);
  });

  it('gives every DTO exactly the properties of its libs/protocol type, optional ones included', () => {
    expect(dtoShapeProblems(checker, filesOf('apps/coordinator/src'))).toEqual([]);
  });

  it('describes a request field once, in its DTO decorators', () => {
    expect(secondDescriptions(checker, filesOf('apps/coordinator/src'))).toEqual([]);
  });

  it('notices a DTO that leaves out an optional field of its libs/protocol type', () => {
    const fixture = programOf({
      'libs/protocol/src/fixture.ts': 'export interface ThingRequest { name: string; size?: number; note?: string }',
      'apps/coordinator/src/fixture.dto.ts':
        "import type { ThingRequest } from '../../../libs/protocol/src/fixture';\n" +
        'export class ThingDto implements ThingRequest { name!: string; size?: number }\n' +
        'export class LooseDto implements ThingRequest { name?: string; size?: number; note?: string; extra?: boolean }',
    });
    const dtoFile = fixture.getSourceFiles().filter((file) => repoPath(file.fileName).endsWith('fixture.dto.ts'));
    expect(dtoShapeProblems(fixture.getTypeChecker(), dtoFile)).toEqual([
      'apps/coordinator/src/fixture.dto.ts ThingDto (implements ThingRequest): missing note',
      'apps/coordinator/src/fixture.dto.ts LooseDto (implements ThingRequest): extra extra; name optional here, required there',
    ]);
  });

  it('documents only response schemas of types declared in libs/protocol', () => {
    const file = prog.getSourceFile(join(ROOT, 'apps/coordinator/src/openapi/schemas.ts'));
    const registry = file?.statements.find(
      (statement): statement is ts.InterfaceDeclaration =>
        ts.isInterfaceDeclaration(statement) && statement.name.text === 'ResponseComponents',
    );
    expect(registry).toBeDefined();
    const found: string[] = [];
    for (const member of registry!.members) {
      if (!ts.isPropertySignature(member) || !member.type) continue;
      const problems = servedProblems(checker, checker.getTypeFromTypeNode(member.type));
      for (const problem of problems) found.push(`${(member.name as ts.Identifier).text}: ${problem}`);
    }
    expect(found).toEqual([]);
  });

  it('keeps libs/protocol plain: it imports only its own files', () => {
    const found: string[] = [];
    for (const path of sourceFiles(PROTOCOL)) {
      const text = readFileSync(path, 'utf8');
      for (const match of text.matchAll(/(?:from|import|require\()\s*['"]([^'"]+)['"]/g)) {
        if (!match[1].startsWith('./')) found.push(`${repoPath(path)} imports ${match[1]}`);
      }
    }
    expect(found).toEqual([]);
  });
});

function decoratorNames(node: ts.Node): string[] {
  if (!ts.canHaveDecorators(node)) return [];
  return (ts.getDecorators(node) ?? []).flatMap((decorator) => {
    const expression = ts.isCallExpression(decorator.expression)
      ? decorator.expression.expression
      : decorator.expression;
    return ts.isIdentifier(expression) ? [expression.text] : [];
  });
}

function unwrapPromise(checker: ts.TypeChecker, type: ts.Type): ts.Type {
  const symbol = type.getSymbol();
  if (symbol?.getName() === 'Promise') {
    const [inner] = checker.getTypeArguments(type as ts.TypeReference);
    if (inner) return inner;
  }
  return type;
}

/** Why `type` is not a served type of libs/protocol; [] when it is. */
function servedProblems(checker: ts.TypeChecker, type: ts.Type): string[] {
  const flags = ts.TypeFlags.Void | ts.TypeFlags.Undefined | ts.TypeFlags.String;
  if (type.flags & flags) return [];
  // A named alias (IdempotencyClaimResponse, a union) is judged by where the alias is declared.
  if (type.aliasSymbol) return declaredInProtocol(type.aliasSymbol, checker.typeToString(type));
  if (type.isUnion()) return type.types.flatMap((member) => servedProblems(checker, member));
  const symbol = type.getSymbol();
  if (!symbol || symbol.getName() === '__type' || symbol.getName() === '__object') {
    return [`inline type ${checker.typeToString(type)}`];
  }
  if (TRANSPORT_WRAPPERS[symbol.getName()]) return [];
  return declaredInProtocol(symbol, checker.typeToString(type));
}

function declaredInProtocol(symbol: ts.Symbol, name: string): string[] {
  const declarations = symbol.getDeclarations() ?? [];
  const outside = declarations.filter((declaration) => !inProtocol(declaration.getSourceFile().fileName));
  return outside.length === 0 && declarations.length > 0
    ? []
    : [`${name} declared in ${outside.map((d) => repoPath(d.getSourceFile().fileName)).join(', ')}`];
}

/** Why each class of `files` implementing a type of libs/protocol does not have exactly its properties. */
function dtoShapeProblems(checker: ts.TypeChecker, files: readonly ts.SourceFile[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    ts.forEachChild(file, function visit(node) {
      if (ts.isClassDeclaration(node) && node.name) {
        const own = propertiesOf(checker, checker.getTypeAtLocation(node.name));
        for (const clause of node.heritageClauses ?? []) {
          if (clause.token !== ts.SyntaxKind.ImplementsKeyword) continue;
          for (const implemented of clause.types) {
            const type = checker.getTypeAtLocation(implemented);
            if (servedProblems(checker, type).length > 0) continue;
            const problems = shapeDifferences(own, propertiesOf(checker, type));
            if (problems.length > 0) {
              found.push(
                `${repoPath(file.fileName)} ${node.name.text} (implements ${implemented.getText()}): ${problems.join('; ')}`,
              );
            }
          }
        }
      }
      ts.forEachChild(node, visit);
    });
  }
  return found;
}

/** A type's data properties (no methods), by name: true when optional. */
function propertiesOf(checker: ts.TypeChecker, type: ts.Type): Map<string, boolean> {
  return new Map(
    checker
      .getPropertiesOfType(type)
      .filter((property) => !(property.flags & ts.SymbolFlags.Method))
      .map((property) => [property.getName(), (property.flags & ts.SymbolFlags.Optional) !== 0]),
  );
}

function shapeDifferences(dto: Map<string, boolean>, wire: Map<string, boolean>): string[] {
  const missing = [...wire.keys()].filter((name) => !dto.has(name));
  const extra = [...dto.keys()].filter((name) => !wire.has(name));
  const optionality = [...wire]
    .filter(([name, optional]) => dto.has(name) && dto.get(name) !== optional)
    .map(
      ([name, optional]) => `${name} ${optional ? 'required here, optional there' : 'optional here, required there'}`,
    );
  return [
    ...(missing.length > 0 ? [`missing ${missing.join(', ')}`] : []),
    ...(extra.length > 0 ? [`extra ${extra.join(', ')}`] : []),
    ...optionality,
  ];
}

/** A program of in-memory files (paths relative to the repository) with the repository's options. */
function programOf(files: Record<string, string>): ts.Program {
  const configFile = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(configFile.config, ts.sys, ROOT);
  const host = ts.createCompilerHost(options);
  const virtual = new Map(Object.entries(files).map(([path, text]) => [join(ROOT, path), text]));
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) =>
    virtual.has(name)
      ? ts.createSourceFile(name, virtual.get(name)!, version)
      : getSourceFile.call(host, name, version, ...rest);
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name) ?? readFile.call(host, name);
  return ts.createProgram([...virtual.keys()], { ...options, noEmit: true }, host);
}

/** Properties of DTOs, and of the libs/protocol types they implement, that carry their own TSDoc. */
function secondDescriptions(checker: ts.TypeChecker, files: readonly ts.SourceFile[]): string[] {
  const found = new Set<string>();
  const check = (declaration: ts.Declaration) => {
    if (!ts.isPropertyDeclaration(declaration) && !ts.isPropertySignature(declaration)) return;
    if (ts.getJSDocCommentsAndTags(declaration).length === 0) return;
    const owner = (declaration.parent as ts.ClassDeclaration | ts.InterfaceDeclaration).name?.text;
    found.add(`${repoPath(declaration.getSourceFile().fileName)} ${owner}.${declaration.name.getText()}`);
  };
  for (const file of files) {
    ts.forEachChild(file, function visit(node) {
      if (ts.isClassDeclaration(node)) {
        const implemented = (node.heritageClauses ?? [])
          .filter((clause) => clause.token === ts.SyntaxKind.ImplementsKeyword)
          .flatMap((clause) => clause.types)
          .map((type) => checker.getTypeAtLocation(type))
          .filter((type) => servedProblems(checker, type).length === 0);
        if (implemented.length > 0) {
          node.members.forEach(check);
          for (const type of implemented) {
            for (const property of checker.getPropertiesOfType(type)) (property.getDeclarations() ?? []).forEach(check);
          }
        }
      }
      ts.forEachChild(node, visit);
    });
  }
  return [...found].sort();
}
