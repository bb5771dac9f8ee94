// The published package, as a user gets it: `npm pack` of this tree, installed from the tarball into
// an empty project (npm's cache, filled by `npm ci`, makes that quick), then its `gatehouse` bin run
// from there (--version, check, serve against a fresh database: the migrations, the OpenAPI document
// and the operator page resolve inside the installed package) and every
// `exports` subpath imported and type-checked as a consumer would.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_POLICIES, SECRET, token } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { callJson, ensureBuilt, ROOT, startServer, type ServerProcess } from '../helpers/process.js';

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  files: string[];
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
  devDependencies: Record<string, string>;
}
const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** The environment without npm's own variables: run from `npm test`, npm_config_local_prefix would point a nested npm at this checkout. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^npm_/i.test(k) && !/^(POLICY_|NODE_ENV$|DATABASE_URL$|JWT_)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

function run(
  file: string,
  args: string[],
  cwd: string,
  timeout = 120_000,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env: cleanEnv(), timeout, maxBuffer: 64 << 20 }, (err, out, errOut) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, out, err: errOut });
    });
  });
}

let dir: string;
let project: string;
let bin: string;
let packed: { filename: string; files: { path: string }[] };
let db: TestDatabase | undefined;
let server: ServerProcess | undefined;

beforeAll(async () => {
  await ensureBuilt();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-pack-'));
  // dist/ is built above; --ignore-scripts keeps `prepare` from building it again under other tests.
  const pack = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], ROOT);
  expect(pack.code, pack.err).toBe(0);
  packed = (JSON.parse(pack.out) as (typeof packed)[])[0]!;
  project = join(dir, 'project');
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // The adapters' SDKs are optional peers: a consumer of those subpaths installs them.
  const peers = ['ai', '@openai/agents'].map((p) => `${p}@${manifest.devDependencies[p]}`);
  const install = await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, packed.filename), ...peers],
    project,
    240_000,
  );
  expect(install.code, install.err).toBe(0);
  bin = join(project, 'node_modules', '.bin', 'gatehouse');
}, 300_000);

afterAll(async () => {
  await server?.kill();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the package', () => {
  it('is publishable: a name of its own, not private, the gatehouse bin', () => {
    expect(manifest.name).toBe('gatehouse-pdp');
    expect(manifest.private).toBeUndefined();
    expect(manifest.bin).toEqual({ gatehouse: 'dist/main.js' });
    expect(packed.filename).toBe(`${manifest.name}-${manifest.version}.tgz`);
  });

  it('packs what runs it and nothing of the checkout besides', () => {
    const paths = packed.files.map((f) => f.path);
    for (const p of [
      'package.json',
      'README.md',
      'LICENSE',
      'dist/main.js',
      'dist/service.js',
      'dist/http/ui/page.html',
      'openapi.yaml',
      'migrations/0001_approvals.sql',
    ]) {
      expect(paths).toContain(p);
    }
    // Every entry of `files` (the example policies among them) is in it.
    for (const entry of manifest.files)
      expect(
        paths.some((p) => p === entry || p.startsWith(`${entry}/`)),
        entry,
      ).toBe(true);
    for (const target of Object.values(manifest.exports)) {
      for (const file of typeof target === 'string' ? [target] : [target.types, target.default])
        expect(paths).toContain(file.replace(/^\.\//, ''));
    }
    expect(
      paths.filter((p) => /^(src|test|bench|scripts|docs|\.data|node_modules|\.ci)\//.test(p) || p === 'Dockerfile'),
    ).toEqual([]);
  });

  it('installed from the tarball, `gatehouse` runs from node_modules/.bin: --version and check', async () => {
    const version = await run(bin, ['--version'], project);
    expect(version).toMatchObject({ code: 0, out: `${manifest.version}\n` });
    const check = await run(bin, ['check', join(ROOT, EXAMPLE_POLICIES), '--env', 'prod'], project);
    expect(check.code, check.err).toBe(0);
    expect(check.out).toMatch(/\nok: 1 file for environment prod\n$/);
    const fixture = await run(bin, ['check', join(ROOT, 'test/cli/fixtures/scoped')], project);
    expect(fixture).toMatchObject({ code: 0, out: expect.stringMatching(/\nok: 2 files for environment dev\n$/) });
    const bad = await run(bin, ['check', join(ROOT, 'test/cli/fixtures/broken'), '--env', 'dev'], project);
    expect(bad.code).toBe(2);
  });

  it('installed, `gatehouse serve` migrates a new database and serves /decide, /openapi.yaml and /ui', async () => {
    db = await createTestDatabase({ migrate: false });
    server = await startServer(
      {
        DATABASE_URL: db.url,
        JWT_SECRET: SECRET,
        POLICY_DIR: join(ROOT, EXAMPLE_POLICIES),
        POLICY_ENV: 'prod',
        NODE_ENV: 'production',
      },
      60_000,
      { cli: bin, cwd: project },
    );
    const decided = await callJson(server.base, 'POST', '/decide', token({ sub: 'agent-1', team: 'support' }), {
      tool: 'lookup_order',
      args: { order: 'A1' },
    });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ decision: 'allow', rule: 'lookups' });
    const openapi = await fetch(`${server.base}/openapi.yaml`);
    expect(openapi.status).toBe(200);
    expect(await openapi.text()).toBe(await readFile(join(ROOT, 'openapi.yaml'), 'utf8'));
    expect((await fetch(`${server.base}/ui`)).status).toBe(200);
    const applied = await db.sql<{ n: number }[]>`select count(*)::int as n from schema_migrations`;
    expect(applied[0]!.n).toBeGreaterThan(0);
    server.proc.kill('SIGTERM');
    expect((await server.exited(20_000)).code).toBe(0);
  });

  it('every `exports` subpath imports, and type-checks, from the installed package', async () => {
    const subpaths = Object.keys(manifest.exports).filter((k) => k !== './package.json');
    expect(subpaths.sort()).toEqual(['./ai-sdk', './client', './openai-agents']);
    const script = [
      `import { createRequire } from 'node:module';`,
      `const { createClient } = await import('${manifest.name}/client');`,
      `const { gateTools, gatehouseToolApproval, settleApprovalRequests } = await import('${manifest.name}/ai-sdk');`,
      `const { gatedTool, settleInterruptions } = await import('${manifest.name}/openai-agents');`,
      `const own = createRequire(import.meta.url)('${manifest.name}/package.json');`,
      'console.log(JSON.stringify([createClient, gateTools, gatehouseToolApproval, settleApprovalRequests, gatedTool, settleInterruptions].map((f) => typeof f).concat(own.version)));',
    ].join('\n');
    await writeFile(join(project, 'imports.mjs'), script);
    const imported = await run(process.execPath, ['imports.mjs'], project);
    expect(imported.code, imported.err).toBe(0);
    expect(JSON.parse(imported.out)).toEqual([...Array(6).fill('function'), manifest.version]);
    // A consumer's TypeScript resolves the `types` of each subpath (the compiler of this checkout).
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        files: ['use.ts'],
      }),
    );
    await writeFile(
      join(project, 'use.ts'),
      [
        `import { createClient, type GatehouseClient } from '${manifest.name}/client';`,
        `import { gateTools } from '${manifest.name}/ai-sdk';`,
        `import { gatedTool } from '${manifest.name}/openai-agents';`,
        `const client: GatehouseClient = createClient({ url: 'http://127.0.0.1:1', token: 't' });`,
        'export const used = [client, gateTools, gatedTool];',
      ].join('\n'),
    );
    const tsc = await run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], project);
    expect(tsc, `${tsc.out}${tsc.err}`).toMatchObject({ code: 0 });
    expect((await stat(join(project, 'node_modules', manifest.name, 'dist', 'client', 'index.d.ts'))).isFile()).toBe(
      true,
    );
  });
});
