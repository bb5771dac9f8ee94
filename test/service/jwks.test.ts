// The process (`node dist/main.js serve`) with a provider key:
// - production with JWT_JWKS_URL or JWT_PUBLIC_KEY and no JWT_AUDIENCE / JWT_ISSUER refuses to start
//   (exit 2), naming what is missing;
// - with JWT_JWKS_URL it serves before the JWKS answers: tokens 503 and /readyz not ready, the fetch
//   retried in the background until it succeeds; SIGTERM then stops the refresh timer with the rest.
// Every wait is bounded: a process that hangs fails the test, it does not hold the run.
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { signingKey, signWith, startJwksServer, type JwksServer, type SigningKey } from '../helpers/jwks.js';
import {
  callJson,
  CLI,
  ensureBuilt,
  eventually,
  ROOT,
  serverEnv,
  startServer,
  type ServerProcess,
} from '../helpers/process.js';

let db: TestDatabase;
let dataDir: string;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  await ensureBuilt();
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-jwks-'));
}, 180_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Runs `serve` to its exit (it must exit on its own: a refused start); its code and output. */
function serveToExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const proc = spawn(process.execPath, [CLI, 'serve'], {
    cwd: ROOT,
    env: serverEnv({ HOST: '127.0.0.1', PORT: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

describe('production with a provider key but no audience or issuer', () => {
  const pem = String(generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }));
  for (const [name, value] of [
    ['JWT_JWKS_URL', 'https://idp.example.com/.well-known/jwks.json'],
    ['JWT_PUBLIC_KEY', pem],
  ] as const) {
    it(`${name}: refuses to start (exit 2), naming JWT_AUDIENCE and JWT_ISSUER and the opt-out`, async () => {
      const { code, output } = await serveToExit({
        NODE_ENV: 'production',
        [name]: value,
        DATABASE_URL: db.url,
        POLICY_ENV: 'prod',
        DATA_DIR: dataDir,
      });
      expect(code, output).toBe(2);
      expect(output).toContain(`NODE_ENV=production with ${name} needs JWT_AUDIENCE and JWT_ISSUER`);
      expect(output).toContain('JWT_ALLOW_UNBOUND=true');
      expect(output).not.toMatch(/gatehouse is serving/);
    }, 60_000);
  }
});

describe('JWT_JWKS_URL in a real process', () => {
  let jwks: JwksServer;
  let key: SigningKey;
  let s: ServerProcess;
  const bound = { iss: 'https://idp.test/', aud: 'gatehouse' };

  beforeAll(async () => {
    key = await signingKey('ES256', 'proc-1');
    jwks = await startJwksServer([key.jwk]);
    cleanups.push(() => jwks.close());
    jwks.setMode('error');
    s = await startServer({
      NODE_ENV: 'production',
      JWT_JWKS_URL: jwks.url,
      JWT_AUDIENCE: bound.aud,
      JWT_ISSUER: bound.iss,
      DATABASE_URL: db.url,
      POLICY_ENV: 'prod',
      DATA_DIR: dataDir,
      SHUTDOWN_GRACE_MS: '120000',
    });
    cleanups.push(() => s.kill());
  }, 60_000);

  it('serves before the JWKS answers (503 and not ready), recovers once it does, and stops on SIGTERM', async () => {
    expect(s.stdout()).toMatch(/the JWKS is not loaded: serving/);
    const ready = await callJson(s.base, 'GET', '/readyz', null);
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: 'not_ready', jwt_keys: 'not_loaded', database: 'ok' });
    const token = await signWith(key, bound);
    const early = await callJson(s.base, 'POST', '/decide', token, { tool: 'lookup_order', args: { order: 'A1' } });
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('2');
    expect(early.body).toMatchObject({ code: 'unavailable' });

    jwks.setMode('ok');
    // The background retry (every 5 s until the first good fetch) loads the keys.
    await eventually(
      '/readyz 200',
      30_000,
      async () => ((await callJson(s.base, 'GET', '/readyz', null)).status === 200 ? true : undefined),
      200,
    );
    const decided = await callJson(s.base, 'POST', '/decide', token, { tool: 'lookup_order', args: { order: 'A1' } });
    expect(decided.status, JSON.stringify(decided.body)).toBe(200);
    expect(decided.body).toMatchObject({ decision: 'allow' });
    // A token of the same provider for another application is refused.
    expect(
      (
        await callJson(s.base, 'POST', '/decide', await signWith(key, { ...bound, aud: 'crm' }), {
          tool: 'lookup_order',
          args: { order: 'A1' },
        })
      ).status,
    ).toBe(401);
    expect(existsSync(join(dataDir, 'dev-jwt-secret'))).toBe(false); // no development secret with a JWKS

    s.proc.kill('SIGTERM');
    expect(await s.exited(20_000), s.stdout()).toEqual({ code: 0, signal: null });
    expect(s.stdout()).not.toMatch(/grace period exceeded|error while shutting down/);
  }, 60_000);
});
