// The CLI's output, compared with golden files in test/cli/golden (UPDATE_GOLDEN=1 rewrites them).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

function golden(name: string, actual: string): void {
  const file = `test/cli/golden/${name}`;
  if (process.env.UPDATE_GOLDEN === '1' || !existsSync(file)) writeFileSync(file, actual);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

describe('gatehouse check', () => {
  it('summarises valid policies and exits 0', async () => {
    const r = await run('check', 'policies', '--env', 'prod');
    expect(r.code).toBe(0);
    golden('check-valid.txt', r.out);
  });

  it('shows the effective rules for one caller and tool', async () => {
    const r = await run('check', 'policies', '--env', 'prod', '--tool', 'refund', '--team', 'support');
    expect(r.code).toBe(0);
    golden('check-tool.txt', r.out);
  });

  it('marks rules that depend on a caller it was not told', async () => {
    const r = await run('check', 'policies', '--env', 'dev', '--tool', 'refund');
    expect(r.code).toBe(0);
    expect(r.out).toContain('only for teams [support]');
  });

  it('exits 2 with every problem as file:line:column: key: message', async () => {
    const r = await run('check', 'test/cli/fixtures/broken', '--env', 'dev');
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    golden('check-broken.txt', r.err);
  });

  it('exits 2 when environments are declared and no --env is given', async () => {
    const r = await run('check', 'policies');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/policies\/payments\.yaml:\d+:\d+: environments: .*--env/);
  });
});

describe('gatehouse test', () => {
  it('passes the shipped examples', async () => {
    const r = await run('test', 'policies');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\d+ passed, 0 failed\n$/);
  });

  it('prints one table of disagreements and exits 1', async () => {
    const r = await run('test', 'test/cli/fixtures/failing');
    expect(r.code).toBe(1);
    golden('test-failing.txt', r.out);
  });

  it('exits 2 on a bad test file', async () => {
    const r = await run('test', 'test/cli/fixtures/badcases');
    expect(r.code).toBe(2);
    golden('test-badcases.txt', r.err);
  });
});

describe('gatehouse hash', () => {
  it('prints the canonical form and its digest', async () => {
    const r = await run('hash', 'test/cli/fixtures/request.json');
    expect(r.code).toBe(0);
    golden('hash.txt', r.out);
  });

  it('prints the approval hash with --approval', async () => {
    const r = await run('hash', 'test/cli/fixtures/request.json', '--approval');
    expect(r.code).toBe(0);
    golden('hash-approval.txt', r.out);
  });

  it('refuses input that is not strict JSON', async () => {
    const r = await run('hash', 'test/cli/fixtures/broken/a.yaml');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/a\.yaml: /);
  });
});

describe('usage', () => {
  it('prints usage and exits 2 for an unknown command', async () => {
    const r = await run('frobnicate');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^usage: gatehouse/);
  });
});
