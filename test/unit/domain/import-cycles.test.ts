/**
 * The domain has no import cycle (issue 33): every .ts file under src/domain is parsed with the
 * TypeScript compiler, its relative imports are resolved, and the graph must have no strongly
 * connected component. `import type` counts too: it creates no runtime cycle, but a type shared
 * in a circle is a type that belongs in a leaf module, and a type edge today is a value edge after
 * the next edit. A failure names each cycle file by file, with the kind of every edge.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const DOMAIN = resolve(import.meta.dirname, '../../../src/domain');

interface Edge {
  to: string;
  /** Every import of `to` in the file is type-only (`import type`, `import { type A }`, `import('…')` types). */
  typeOnly: boolean;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** `./x.js`, `./x` or `./x/index.js` → the .ts file among `known`, or null (outside the scan). */
function resolveSpecifier(from: string, specifier: string, known: Set<string>): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.(js|ts)$/, '');
  for (const candidate of [`${stem}.ts`, join(base, 'index.ts')]) if (known.has(candidate)) return candidate;
  return null;
}

function isTypeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // a side-effect import runs the module
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    clause.name === undefined &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  );
}

/** Each file's relative imports within `root`: static, re-exports, dynamic `import()` and `import('…')` types. */
function importGraph(root: string): Map<string, Edge[]> {
  const files = tsFiles(root);
  const known = new Set(files);
  const graph = new Map<string, Edge[]>();
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const edges = new Map<string, boolean>();
    const add = (specifier: string, typeOnly: boolean) => {
      const to = resolveSpecifier(file, specifier, known);
      if (to !== null) edges.set(to, (edges.get(to) ?? true) && typeOnly);
    };
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node.moduleSpecifier.text, isTypeOnlyImport(node));
      } else if (
        ts.isExportDeclaration(node) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier)
      ) {
        add(node.moduleSpecifier.text, node.isTypeOnly);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] !== undefined &&
        ts.isStringLiteral(node.arguments[0])
      ) {
        add(node.arguments[0].text, false);
      } else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      ) {
        add(node.argument.literal.text, true);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    graph.set(
      file,
      [...edges].map(([to, typeOnly]) => ({ to, typeOnly })),
    );
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one file (or a file importing itself). */
function circles(graph: Map<string, Edge[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const { to } of graph.get(v) ?? []) {
      if (!index.has(to)) {
        connect(to);
        low.set(v, Math.min(low.get(v)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(v, Math.min(low.get(v)!, index.get(to)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).some((e) => e.to === v)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) connect(file);
  return found;
}

/** One shortest cycle through the component's first file, as "a.ts → b.ts (type) → a.ts". */
function describeCircle(graph: Map<string, Edge[]>, component: string[], root: string): string {
  const members = new Set(component);
  const start = component[0]!;
  const cameFrom = new Map<string, { from: string; typeOnly: boolean }>();
  const queue = [start];
  search: while (queue.length > 0) {
    const v = queue.shift()!;
    for (const edge of graph.get(v) ?? []) {
      if (!members.has(edge.to) || cameFrom.has(edge.to)) continue;
      cameFrom.set(edge.to, { from: v, typeOnly: edge.typeOnly });
      if (edge.to === start) break search;
      queue.push(edge.to);
    }
  }
  const steps: string[] = [];
  const onPath = new Set<string>();
  let at = start;
  do {
    const step = cameFrom.get(at)!;
    steps.unshift(`${step.typeOnly ? ' →(type) ' : ' → '}${relative(root, at)}`);
    onPath.add(at);
    at = step.from;
  } while (at !== start);
  const others = component.filter((f) => !onPath.has(f));
  const rest =
    others.length > 0 ? `\n    also in this circle: ${others.map((f) => relative(root, f)).join(', ')}` : '';
  return `  ${relative(root, start)}${steps.join('')}${rest}`;
}

function importCycles(root: string): string[] {
  const graph = importGraph(root);
  return circles(graph).map((component) => describeCircle(graph, component, root));
}

describe('import cycles', () => {
  it('src/domain has none, type-only imports included', () => {
    const cycles = importCycles(DOMAIN);
    const report = cycles.length === 0 ? '' : `import cycles in src/domain:\n${cycles.join('\n')}`;
    expect(report).toBe('');
  });

  describe('the scan itself', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cycles-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    };

    it('finds a circle closed by a type-only import and names every file and edge kind', () => {
      write('circle/a.ts', "import { b } from './b.js';\nexport const a = b;\n");
      write('circle/b.ts', "import { c } from './nested/c.js';\nexport const b = c;\n");
      write('circle/nested/c.ts', "import type { A } from '../a.js';\nexport const c = 1 as unknown as A;\n");
      write('circle/leaf.ts', "import { a } from './a.js';\nexport const leaf = a;\n");
      expect(importCycles(join(dir, 'circle'))).toEqual(['  a.ts → b.ts → nested/c.ts →(type) a.ts']);
    });

    it('sees re-exports, dynamic imports, import() types and directory indexes', () => {
      write('kinds/x.ts', "export * from './y.js';\n");
      write('kinds/y.ts', "export async function y() { return import('./z/index.js'); }\n");
      write('kinds/z/index.ts', "export type X = import('../w.js').W;\n");
      write('kinds/w.ts', "export { y } from './x';\nexport type W = number;\n");
      expect(importCycles(join(dir, 'kinds'))).toEqual(['  w.ts → x.ts → y.ts → z/index.ts →(type) w.ts']);
    });

    it('a graph without a circle passes', () => {
      write(
        'tree/a.ts',
        "import { b } from './b.js';\nimport type { C } from './c.js';\nexport const a: C = b;\n",
      );
      write('tree/b.ts', "import type { C } from './c.js';\nexport const b: C = 1;\n");
      write('tree/c.ts', "import { z } from 'zod';\nexport type C = number;\nexport const s = z;\n");
      expect(importCycles(join(dir, 'tree'))).toEqual([]);
    });
  });
});
