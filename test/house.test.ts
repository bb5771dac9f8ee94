// The layers the code promises, checked on its imports (docs/design.md "Code layout"): the pure core imports
// nothing around it, the stores never reach up into the engine, HTTP or the CLI, HTTP reaches the
// stores only through the engine, no two folders import each other, nothing imports the process
// entry point, only the configuration, the entry point and the CLI read the environment, and no
// two modules of src/ import each other, however indirectly. Also: no test reads the example
// policies/, which are the users' to change, and nothing in the condition language can run code.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function filesUnder(dir: string, ext: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...filesUnder(path, ext));
    else if (ext.test(name)) out.push(path);
  }
  return out.sort();
}

// Import specifiers of a module: static imports and re-exports (type-only ones too: a cycle of types
// is still two modules that cannot be read apart), and import() of a literal.
const STATIC = /^\s*(?:import|export)\s[^;]*?\sfrom\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specs = [...text.matchAll(STATIC)]
    .map((m) => m[1] ?? m[2] ?? '')
    .concat([...text.matchAll(DYNAMIC)].map((m) => m[1] ?? ''));
  return specs
    .filter((s) => s.startsWith('.'))
    .map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)).replace(/\.js$/, '.ts'));
}

const SRC = filesUnder('src', /\.ts$/);
const GRAPH = new Map(SRC.map((f) => [f, importsOf(f)]));

/** Each rule: modules under `from` may import, of ours, only what is under `only` (when given) and nothing under `never`. */
const STORES = ['src/approvals/', 'src/budgets/', 'src/records/', 'src/sessions/', 'src/webhooks/'];
const ABOVE_STORES = ['src/engine/', 'src/http/', 'src/cli/', 'src/main.ts', 'src/service.ts', 'src/compose.ts'];
const RULES: { from: string; only?: string[]; never?: string[]; why: string }[] = [
  { from: 'src/json/', only: ['src/json/'], why: 'strict JSON and the canonical form are the innermost core' },
  {
    from: 'src/policy/',
    only: ['src/policy/', 'src/json/'],
    why: 'the policy core is pure: no HTTP, database, logging or process',
  },
  {
    from: 'src/kernel/',
    only: ['src/kernel/', 'src/json/'],
    why: 'ids, cursors and list errors are below every store',
  },
  {
    from: 'src/db/',
    never: [...STORES, ...ABOVE_STORES],
    why: 'the database layer (and the Idempotency-Key table) is below every store',
  },
  {
    from: 'src/approvals/',
    never: [...ABOVE_STORES, 'src/webhooks/'],
    why: 'the approval store knows no HTTP, and tells its transitions to a port, never the outbox',
  },
  {
    from: 'src/budgets/',
    never: [...ABOVE_STORES, 'src/approvals/', 'src/webhooks/'],
    why: 'the counters of budgets and rate limits know nothing of approvals',
  },
  {
    from: 'src/webhooks/',
    never: [...ABOVE_STORES, 'src/approvals/store.ts', 'src/approvals/service.ts'],
    why: 'the outbox and its delivery know no HTTP server',
  },
  { from: 'src/sessions/', never: [...ABOVE_STORES, 'src/approvals/'], why: 'the session store knows no HTTP' },
  {
    from: 'src/records/',
    never: [...ABOVE_STORES, 'src/approvals/'],
    why: 'the decision store knows no HTTP: the engine queues on it, the CLI reads it',
  },
  {
    from: 'src/engine/',
    never: ['src/http/', 'src/cli/', 'src/main.ts', 'src/service.ts', 'src/compose.ts'],
    why: 'the engine takes its parts and knows no transport: HTTP calls it, never the reverse',
  },
  {
    from: 'src/http/',
    only: ['src/http/', 'src/engine/', 'src/policy/', 'src/json/', 'src/config.ts'],
    why: 'HTTP only speaks HTTP: it reaches the stores through the engine, never a store folder',
  },
  {
    from: 'src/client/',
    only: ['src/client/', 'src/json/'],
    why: 'the client ships to hosts: it knows the service only by its HTTP API and the canonical JSON of the contract',
  },
  {
    from: 'src/http/routes/',
    never: ['src/http/routes/', 'src/http/app.ts'],
    why: 'routes share code through modules, never each other or the app',
  },
];

describe('the layers of src/', () => {
  it('reads every module and resolves every relative import to a file', () => {
    expect(SRC.length).toBeGreaterThan(40);
    for (const [file, imports] of GRAPH)
      for (const target of imports) expect(GRAPH.has(target), `${file} -> ${target}`).toBe(true);
  });

  for (const rule of RULES) {
    it(`${rule.from}: ${rule.why}`, () => {
      const broken: string[] = [];
      for (const [file, imports] of GRAPH) {
        if (!file.startsWith(rule.from)) continue;
        for (const target of imports) {
          const sameRoute = rule.from === 'src/http/routes/' && target === file;
          if (rule.only && !rule.only.some((p) => target.startsWith(p))) broken.push(`${file} -> ${target}`);
          if (rule.never?.some((p) => target.startsWith(p)) && !sameRoute) broken.push(`${file} -> ${target}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }

  it('nothing imports the process entry point (src/main.ts)', () => {
    const importers = [...GRAPH].filter(([, imports]) => imports.includes('src/main.ts')).map(([file]) => file);
    expect(importers).toEqual([]);
  });

  it('only the configuration, the entry point and the CLI read process.env', () => {
    const readers = SRC.filter((f) => /\bprocess\.env\b/.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(readers.filter((f) => f !== 'src/config.ts' && f !== 'src/main.ts' && !f.startsWith('src/cli'))).toEqual([]);
  });

  it('has no import cycle, direct or indirect', () => {
    expect(cycles(GRAPH)).toEqual([]);
  });

  it('every path a rule names exists', () => {
    const named = RULES.flatMap((r) => [r.from, ...(r.only ?? []), ...(r.never ?? [])]);
    const missing = [...new Set(named)].filter(
      (p) => !(p.endsWith('/') ? SRC.some((f) => f.startsWith(p)) : GRAPH.has(p)),
    );
    expect(missing).toEqual([]);
  });

  it('has no cycle between folders: the house reads top to bottom', () => {
    // A module's folder is its first directory under src/ (src/http/routes is src/http); a module
    // directly in src/ is a room of its own.
    const folderOf = (file: string): string => {
      const parts = file.split('/');
      return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : file;
    };
    const folders = new Map<string, Set<string>>();
    for (const [file, imports] of GRAPH) {
      const from = folderOf(file);
      const to = folders.get(from) ?? new Set<string>();
      for (const target of imports) if (folderOf(target) !== from) to.add(folderOf(target));
      folders.set(from, to);
    }
    expect(cycles(new Map([...folders].map(([f, to]) => [f, [...to]])))).toEqual([]);
  });

  it('the engine and the stores never import a web framework', () => {
    const framework = /from\s+['"](?:fastify|@fastify\/[^'"]+)['"]/;
    const below = ['src/engine/', 'src/db/', 'src/kernel/', ...STORES];
    const offenders = SRC.filter(
      (f) => below.some((p) => f.startsWith(p)) && framework.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(offenders).toEqual([]);
  });

  it('config.ts is read by HTTP for its types only', () => {
    const valueImports = SRC.filter((f) => f.startsWith('src/http/')).filter((f) =>
      /^\s*import\s+(?!type\b)[^;]*from\s+['"][./]+config\.js['"]/m.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(valueImports).toEqual([]);
  });
});

describe('the example policies belong to the users', () => {
  // The ways a test names that directory as a path: `policies/…`, `./policies`, or `policies` as a
  // call's first argument (cp('policies', …), loadPolicies('policies')) or a CLI run's (check, test,
  // --policies).
  const NAMES_THE_DIRECTORY =
    /['"`](?:\.\/)?policies\/|['"`]\.\/policies['"`]|\(\s*['"`]policies['"`]|['"`](?:check|test|--policies)['"`],\s*['"`]policies['"`]/;
  // config.test.ts asserts the documented default of POLICY_DIR, './policies', and reads nothing;
  // service/policies-dir.test.ts names the policies/ of a temporary checkout it makes.
  const ALLOWED = new Set(['test/config.test.ts', 'test/house.test.ts', 'test/service/policies-dir.test.ts']);

  it('no test reads policies/ (tests use fixtures of their own)', () => {
    const readers = filesUnder('test', /\.(ts|mjs)$/).filter(
      (f) => !ALLOWED.has(f) && NAMES_THE_DIRECTORY.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(readers).toEqual([]);
  });

  // A process started from the checkout (the CLI, `serve`, a shell running them) would read the
  // default POLICY_DIR, ./policies. Each one takes its environment from serverEnv()
  // (test/helpers/process.ts), which always names POLICY_DIR; test/service/policies-dir.test.ts shows
  // that such a process decides by that directory whatever policies/ holds.
  it('every process a test starts from the checkout gets its environment from serverEnv()', () => {
    const START = /\b(?:spawn|execFile|spawnSync|execFileSync|fork)\(|new StdioClientTransport\(/g;
    const RUNS_GATEHOUSE = /\bCLI\b|main\.js|\.cli\b|cwd: ROOT\b|cwd: at\.cwd/;
    const unguarded: string[] = [];
    for (const file of filesUnder('test', /\.(ts|mjs)$/)) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      // Variables this file fills from serverEnv(): `const env = serverEnv(…)`.
      const fromServerEnv = new Set([...text.matchAll(/\b(?:const|let)\s+(\w+)\s*=\s*serverEnv\(/g)].map((m) => m[1]!));
      for (const m of text.matchAll(START)) {
        const call = balanced(text, m.index + m[0].length - 1);
        if (!RUNS_GATEHOUSE.test(call)) continue;
        if (call.includes('serverEnv(')) continue;
        const named = /\benv(?::\s*(?:\{\s*\.\.\.)?(\w+))?\s*[,}]/.exec(call);
        if (named !== null && fromServerEnv.has(named[1] ?? 'env')) continue;
        unguarded.push(`${file}: ${call.replace(/\s+/g, ' ').slice(0, 120)}`);
      }
    }
    expect(unguarded).toEqual([]);
  });
});

/** The text of a call from its opening parenthesis to the one that closes it. */
function balanced(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return text.slice(open, i + 1);
  }
  return text.slice(open);
}

/** The strongly connected components of more than one module (Tarjan), each as its sorted files. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('nothing in the condition language can run code', () => {
  it('the condition modules never use eval, Function, vm or dynamic import', () => {
    const dir = join(ROOT, 'src', 'policy', 'condition');
    for (const name of readdirSync(dir)) {
      const text = readFileSync(join(dir, name), 'utf8')
        .replace(/\/\/.*$/gm, '')
        .replace(/\/\*[\s\S]*?\*\//g, '');
      expect(text, name).not.toMatch(
        /\beval\s*\(|\bnew\s+Function\b|\bFunction\s*\(|node:vm|\bimport\s*\(|\brequire\s*\(/,
      );
    }
  });
});
