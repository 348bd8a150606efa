/**
 * No circle of imports in src/, type-only imports included: the lint rule (import-x/no-cycle) skips
 * `import type`, and a circle of types ties two rooms together as surely as one of values.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SRC = path.resolve(__dirname, '..', '..', 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The files of src/ that `file` imports or re-exports, `import type` and `export type` included. */
function localImports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms)].map((m) => m[1]);
  return specifiers.flatMap((spec) => {
    const base = path.resolve(path.dirname(file), spec);
    const found = [`${base}.ts`, path.join(base, 'index.ts')].find((candidate) => fs.existsSync(candidate));
    return found ? [found] : [];
  });
}

/** Every circle, as the list of files from its first file back to it (depth-first search). */
function circles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, localImports(f)]));
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return found;
}

test('no file of src/ imports, through any chain of imports (types included), a file that imports it', () => {
  const relative = circles(sourceFiles(SRC)).map((circle) => circle.map((f) => path.relative(SRC, f)).join(' → '));
  expect(relative).toEqual([]);
});

test('the check finds a circle when there is one', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cycles-'));
  try {
    fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport interface A { b?: B }\n");
    fs.writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a';\nexport interface B { a?: A }\n");
    fs.writeFileSync(path.join(dir, 'c.ts'), "import type { A } from './a';\nexport type C = A;\n");
    expect(circles(sourceFiles(dir)).map((c) => c.map((f) => path.basename(f)))).toEqual([['a.ts', 'b.ts', 'a.ts']]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the check reads the imports of src/, multi-line and type-only ones included', () => {
  const edges = sourceFiles(SRC).reduce((sum, file) => sum + localImports(file).length, 0);
  expect(edges).toBeGreaterThan(150);
});
