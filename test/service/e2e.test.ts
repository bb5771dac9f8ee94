// End to end: the real process (`node dist/main.js serve`) on a real port, in development mode (no JWT
// key, so its banner on stderr gives tokens), on a fresh test database. One approval loop over fetch, then SIGTERM: the
// process finishes, logs "stopped" and exits 0. Every wait is bounded.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { signJwt } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { CLI, ensureBuilt, freeTcpPort, ROOT, serverEnv } from '../helpers/process.js';

/** Resolves with the output so far once `test` holds; rejects on exit or after ms. */
function waitForOutput(
  child: ChildProcess,
  read: () => string,
  test: (out: string) => boolean,
  ms: number,
  what: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (test(read())) done(() => resolve(read()));
    };
    const onExit = (code: number | null): void =>
      done(() => reject(new Error(`the server exited (${code}) before ${what}:\n${read()}`)));
    const timer = setTimeout(() => done(() => reject(new Error(`timed out waiting for ${what}:\n${read()}`))), ms);
    const done = (fn: () => void): void => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('exit', onExit);
      fn();
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

function waitForExit(child: ChildProcess, ms: number): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not exit in time')), ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

let db: TestDatabase;
let dataDir: string;
let child: ChildProcess | null = null;
let stdout = '';
let stderr = '';

beforeAll(async () => {
  await ensureBuilt();
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-e2e-'));
}, 180_000);

afterAll(async () => {
  if (child !== null && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await waitForExit(child, 5_000).catch(() => null);
  }
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it('serves, runs an approval loop over fetch, and stops cleanly on SIGTERM', async () => {
  const port = await freeTcpPort();
  // JWT_MAX_LIFETIME below the development tokens' usual 24 h: the banner's tokens follow it.
  // Every decision also recorded in the database (docs/operations.md "Decision records").
  const env = serverEnv({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: db.url,
    LOG_LEVEL: 'info',
    JWT_MAX_LIFETIME: '3600',
    DECISION_STORE: 'postgres',
  });
  const proc = spawn(process.execPath, [CLI, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child = proc;
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => {
    stdout += chunk;
  });
  proc.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });

  // The log (JSON lines) on stdout, the banner on stderr.
  await waitForOutput(
    proc,
    () => stdout + stderr,
    () => stdout.includes('gatehouse is serving') && /APPROVER_TOKEN=\S+\n/.test(stderr),
    30_000,
    'the banner',
  );
  const banner = stderr;
  const serving = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === 'gatehouse is serving');
  expect(serving).toMatchObject({ url: `http://127.0.0.1:${port}`, env: 'dev' });
  expect(banner).toContain('Tokens valid for 1 hour:');
  const agentToken = /AGENT_TOKEN=(\S+)/.exec(banner)![1]!;
  const approverToken = /APPROVER_TOKEN=(\S+)/.exec(banner)![1]!;
  const base = `http://127.0.0.1:${port}`;

  const call = async (method: string, path: string, tok: string | null, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(tok ? { authorization: `Bearer ${tok}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  expect((await call('GET', '/healthz', null)).status).toBe(200);
  expect(await call('GET', '/readyz', null)).toMatchObject({ status: 200, body: { database: 'ok' } });
  expect((await call('POST', '/decide', null, { tool: 'lookup_order' })).status).toBe(401);
  // Signed with the development secret, but living two hours: over JWT_MAX_LIFETIME.
  const secret = (await readFile(join(dataDir, 'dev-jwt-secret'), 'utf8')).trim();
  const now = Math.floor(Date.now() / 1000);
  const longLived = signJwt(
    { sub: 'dev-agent', team: 'support', roles: [], iat: now, exp: now + 7200 },
    { key: secret },
  );
  expect(await call('POST', '/decide', longLived, { tool: 'lookup_order' })).toMatchObject({
    status: 401,
    body: { detail: "the token's lifetime is longer than this server accepts" },
  });

  const request = { tool: 'refund', args: { order: 'E2E-1', amount: 120 } };
  const first = await call('POST', '/decide', agentToken, request);
  expect(first).toMatchObject({ status: 403, body: { decision: 'require_approval', rule: 'refund-support' } });

  const created = await call('POST', '/approvals', agentToken, request);
  expect(created).toMatchObject({ status: 201, body: { status: 'pending', requester: { sub: 'dev-agent' } } });
  const id = created.body.id as string;

  const granted = await call('POST', `/approvals/${id}/grant`, approverToken, { note: 'e2e' });
  expect(granted).toMatchObject({ status: 200, body: { status: 'granted', decided_by: 'dev-operator' } });

  const redeemed = await call('POST', '/decide', agentToken, { ...request, approval_id: id });
  expect(redeemed).toMatchObject({ status: 200, body: { decision: 'allow', approval: { id, status: 'consumed' } } });
  const spent = await call('POST', '/decide', agentToken, { ...request, approval_id: id });
  expect(spent.status).toBe(403);

  proc.kill('SIGTERM');
  const code = await waitForExit(proc, 20_000);
  expect(code, stderr).toBe(0);
  const lines = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  // The decision store holds every answered decision, the filing and the redeems too (those with
  // what they wrote; the others by the shutdown at the latest), each as its decision log line.
  const recorded = await db.sql<{ id: string; decision: string; approval_id: string | null; args: unknown }[]>`
    select id::text, decision, approval_id, args from decisions order by decided_at`;
  const logged = lines.filter((l) => l.msg === 'decision').map((l) => l.decision_id);
  expect(recorded.map((r) => r.id)).toEqual(logged);
  expect([recorded[0], recorded[2], recorded[3]].map((r) => r?.id)).toEqual(
    [first, redeemed, spent].map((r) => r.body.decision_id),
  );
  expect(recorded.map((r) => [r.decision, r.approval_id, r.args])).toEqual([
    ['require_approval', null, null],
    ['require_approval', null, null], // the filing, as the decision it made
    ['allow', id, null],
    ['require_approval', id, null], // a spent approval: file a new one
  ]);
  expect(lines.some((l) => l.msg === 'shutting down: finishing in-flight requests' && l.signal === 'SIGTERM')).toBe(
    true,
  );
  expect(lines.at(-1)).toMatchObject({ msg: 'stopped' });
  // Decision log lines carried no argument values.
  expect(stdout).not.toContain('E2E-1');
}, 60_000);
