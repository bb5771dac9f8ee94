// `gatehouse check … | head -1`: a reader that goes away after the first line is not an error. The
// command ends quietly with its own exit code (check: 0), without a stack trace (src/cli/io.ts).
// The output is made more than twice what a pipe holds (64 KiB on Linux), so that the command is
// still writing when the reader closes.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../../src/main.js';
import { CLI, ensureBuilt, ROOT, serverEnv } from '../helpers/process.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-epipe-'));
const rulesDir = join(dir, 'rules');
const casesDir = join(dir, 'cases');

beforeAll(async () => {
  mkdirSync(rulesDir);
  mkdirSync(casesDir);
  const rules = Array.from(
    { length: 6000 },
    (_, i) => `  - id: rule-${String(i).padStart(5, '0')}\n    tools: ["t"]\n    allow: true\n`,
  ).join('');
  writeFileSync(join(rulesDir, 'many.yaml'), `policy: many\nrules:\n${rules}`);
  // Every case disagrees (the policy denies everything): a long table, and exit 1.
  writeFileSync(join(casesDir, 'closed.yaml'), 'policy: closed\ndefault: deny\n');
  const cases = Array.from(
    { length: 3000 },
    (_, i) => `  - {name: case ${i} wants allow, tool: t, want: allow}\n`,
  ).join('');
  writeFileSync(join(casesDir, 'closed.test.yaml'), `cases:\n${cases}`);
  await ensureBuilt();
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * `node dist/main.js ARGV | head -1` in bash: a real pipe, as a shell makes it (a child's stdout that
 * Node's spawn() makes is a socket pair, whose larger buffers would take the whole output before the
 * reader leaves). The command's own exit code is read from PIPESTATUS, its stderr kept apart.
 */
function firstLineThenClose(argv: string[]): Promise<{ code: number; line: string; stderr: string }> {
  const codeFile = join(dir, `code-${Math.random().toString(36).slice(2)}`);
  const errFile = `${codeFile}.err`;
  const quoted = [process.execPath, CLI, ...argv].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const script = `${quoted} 2>'${errFile}' | head -1; echo "\${PIPESTATUS[0]}" >'${codeFile}'`;
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', script], { cwd: ROOT, env: serverEnv({}), timeout: 60_000 }, (err, stdout) => {
      if (err) return reject(err);
      resolve({
        code: Number(readFileSync(codeFile, 'utf8').trim()),
        line: stdout.replace(/\n$/, ''),
        stderr: readFileSync(errFile, 'utf8'),
      });
    });
  });
}

/** The whole stdout of the command and its exit code, run in-process. */
async function whole(argv: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: () => undefined });
  return { code, out };
}

it('check DIR --tool T | head -1: exit 0, nothing on stderr (no EPIPE stack trace)', async () => {
  const full = await whole(['check', rulesDir, '--tool', 't']);
  expect(full.code).toBe(0);
  expect(full.out.length).toBeGreaterThan(2 * 65_536);

  const r = await firstLineThenClose(['check', rulesDir, '--tool', 't']);
  expect(r.line).toBe(full.out.slice(0, full.out.indexOf('\n')));
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
}, 60_000);

it('test DIR | head -1 with failing cases: its own exit code 1, nothing on stderr', async () => {
  const full = await whole(['test', casesDir]);
  expect(full.code).toBe(1);
  expect(full.out.length).toBeGreaterThan(2 * 65_536);

  const r = await firstLineThenClose(['test', casesDir]);
  expect(r.line).toMatch(/^case\s+name\s+want\s+got/);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(1);
}, 60_000);
