// `gatehouse token`: a development token the service accepts (the test app, verifying with the same
// secret), that a service with another secret refuses; its claims under the configured names; its
// lifetime bounded by JWT_MAX_LIFETIME; the development secret shared with `serve`; and the refusals
// (production, an asymmetric key or a JWKS, claims the service would refuse).
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runToken } from '../../src/cli/token.js';
import { developmentSecret } from '../../src/dev-secret.js';
import { bearer, createTestApp, post, SECRET, type TestApp } from '../helpers/app.js';
import { CLI, ensureBuilt, ROOT, serverEnv } from '../helpers/process.js';

type Env = Record<string, string | undefined>;

async function mint(argv: string[], env: Env): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runToken(argv, { out: (s) => (out += s), err: (s) => (err += s) }, env);
  return { code, out, err };
}

/** The token of a successful mint (one line on stdout, nothing else). */
async function tokenFor(argv: string[], env: Env = { JWT_SECRET: SECRET }): Promise<string> {
  const r = await mint(argv, env);
  expect(r.code, r.err).toBe(0);
  expect(r.out).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/);
  return r.out.trimEnd();
}

function decode(token: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [h, p] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h!, 'base64url').toString('utf8')) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(p!, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-token-'));
let app: TestApp;
let other: TestApp;
beforeAll(async () => {
  [app, other] = await Promise.all([
    createTestApp({ env: 'prod', database: true }),
    createTestApp({ env: 'prod', key: 'another-secret-0123456789abcdef0123' }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), other?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a minted token', () => {
  it('authenticates against a server with the same secret, as the caller it names, and is refused by one with another secret', async () => {
    const support = await tokenFor(['--sub', 'agent-7', '--team', 'support', '--agent', 'billing-bot']);
    const sales = await tokenFor(['--sub', 'agent-9', '--team', 'sales']);
    const small = { tool: 'refund', args: { order: 'A1', amount: 40 } };
    // refund-support allows a small refund to team support only: the team claim was read.
    expect((await post(app.app, '/decide', small, support)).json()).toMatchObject({
      decision: 'allow',
      rule: 'refund-support',
    });
    expect((await post(app.app, '/decide', small, sales)).json()).toMatchObject({ decision: 'deny' });
    const refused = await post(other.app, '/decide', small, support);
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ code: 'unauthorized' });
  });

  it('carries its roles: a second approver grants, and the requester holding the approver role cannot approve its own request', async () => {
    const agent = await tokenFor(['--sub', 'agent-7', '--team', 'support', '--role', 'approver']);
    const approver = await tokenFor(['--sub', 'bob', '--team', 'ops', '--role', 'approver', '--role', 'admin']);
    const plain = await tokenFor(['--sub', 'carol', '--team', 'ops']);
    const created = await post(app.app, '/approvals', { tool: 'refund', args: { order: 'T1', amount: 120 } }, agent);
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as { id: string }).id;
    expect((await post(app.app, `/approvals/${id}/grant`, {}, plain)).statusCode).toBe(403); // no approver role
    const self = await post(app.app, `/approvals/${id}/grant`, {}, agent);
    expect(self.statusCode).toBe(403);
    expect(self.json()).toMatchObject({ detail: 'an approver cannot decide an approval it requested' });
    expect((await post(app.app, `/approvals/${id}/grant`, {}, approver)).json()).toMatchObject({
      status: 'granted',
      decided_by: 'bob',
    });
    // Roles hold as given: both roles read the policies.
    expect((await app.app.inject({ method: 'GET', url: '/policies', headers: bearer(approver) })).statusCode).toBe(200);
  });

  it('is HS256, with sub, the team, agent and roles claims under their configured names, iat, exp, and iss/aud when configured', async () => {
    const token = await tokenFor(['--sub', 'u', '--team', 't', '--agent', 'a', '--role', 'r1', '--role', 'r2'], {
      JWT_SECRET: SECRET,
      TEAM_CLAIM: 'grp',
      AGENT_CLAIM: 'azp',
      ROLES_CLAIM: 'scope',
      JWT_ISSUER: 'https://idp.example',
      JWT_AUDIENCE: 'gatehouse',
    });
    const { header, claims } = decode(token);
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(Object.keys(claims).sort()).toEqual(['aud', 'azp', 'exp', 'grp', 'iat', 'iss', 'scope', 'sub']);
    expect(claims).toMatchObject({
      sub: 'u',
      grp: 't',
      azp: 'a',
      scope: ['r1', 'r2'],
      iss: 'https://idp.example',
      aud: 'gatehouse',
    });
    const now = Math.floor(Date.now() / 1000);
    expect(Math.abs((claims.iat as number) - now)).toBeLessThanOrEqual(5);
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600); // the default lifetime
    // Only what was asked: no team, agent or roles claim when none is given.
    expect(Object.keys(decode(await tokenFor(['--sub', 'u'])).claims).sort()).toEqual(['exp', 'iat', 'sub']);
  });

  it('--ttl sets the lifetime; JWT_MAX_LIFETIME bounds it: a longer one is refused, the default shrinks to it', async () => {
    const life = async (argv: string[], env: Env = { JWT_SECRET: SECRET }): Promise<number> => {
      const { claims } = decode(await tokenFor(['--sub', 'u', ...argv], env));
      return (claims.exp as number) - (claims.iat as number);
    };
    expect(await life(['--ttl', '90s'])).toBe(90);
    expect(await life(['--ttl', '30m'])).toBe(1800);
    expect(await life(['--ttl', '24h'])).toBe(86_400);
    expect(await life([], { JWT_SECRET: SECRET, JWT_MAX_LIFETIME: '600' })).toBe(600);
    const long = await mint(['--sub', 'u', '--ttl', '25h'], { JWT_SECRET: SECRET });
    expect(long).toMatchObject({ code: 2, out: '' });
    expect(long.err).toMatch(/^gatehouse token: refused: --ttl 25h is longer than JWT_MAX_LIFETIME \(86400 s\)/);
    // A bare number is seconds, as in every duration Gatehouse reads.
    expect(await life(['--ttl', '3600'])).toBe(3600);
    for (const ttl of ['1.5h', '0s', '1500ms', 'soon', '']) {
      const bad = await mint(['--sub', 'u', '--ttl', ttl], { JWT_SECRET: SECRET });
      expect(bad, ttl).toMatchObject({ code: 2, out: '' });
      expect(bad.err, ttl).toMatch(
        /gatehouse token: --ttl must be a whole number of seconds, or one with a unit: 90s, 30m, 1h, 24h\n$/,
      );
    }
    // A token living JWT_MAX_LIFETIME is accepted by a server with that maximum (the test app's: 24 h).
    const day = await tokenFor(['--sub', 'agent-7', '--team', 'support', '--ttl', '24h']);
    expect((await post(app.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, day)).statusCode).toBe(200);
  });

  it('without JWT_SECRET: signed with the development secret serve keeps under DATA_DIR, created (0600) when missing', async () => {
    const dataDir = join(dir, 'fresh');
    const r = await mint(['--sub', 'u'], { DATA_DIR: dataDir });
    expect(r.code, r.err).toBe(0);
    const file = join(dataDir, 'dev-jwt-secret');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(r.err).toContain(`signed with the development secret in ${file}`);
    // serve reads the same secret (src/dev-secret.ts), and a server with it accepts the token.
    const secret = await developmentSecret(dataDir);
    expect(readFileSync(file, 'utf8').trim()).toBe(secret);
    const dev = await createTestApp({ env: 'prod', key: secret });
    try {
      expect(
        (await post(dev.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, r.out.trimEnd())).statusCode,
      ).toBe(200);
    } finally {
      await dev.close();
    }
    // An existing secret is reused, not replaced.
    const again = await mint(['--sub', 'u'], { DATA_DIR: dataDir });
    expect(again.code).toBe(0);
    expect(readFileSync(file, 'utf8').trim()).toBe(secret);
  });
});

describe('refusals (exit 2, nothing on stdout, never the secret)', () => {
  const refused = async (argv: string[], env: Env, why: RegExp): Promise<void> => {
    const r = await mint(argv, env);
    expect(r.code, r.err).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(why);
    expect(r.err).not.toContain(SECRET);
  };

  it('in production, with or without a secret', async () => {
    await refused(
      ['--sub', 'u'],
      { NODE_ENV: 'production', JWT_SECRET: SECRET, DATABASE_URL: 'postgres://db/g' },
      /^gatehouse token: refused: NODE_ENV=production/,
    );
    await refused(['--sub', 'u'], { NODE_ENV: 'production' }, /^gatehouse token: refused: NODE_ENV=production/);
  });

  it('with an asymmetric key or a JWKS, which it cannot sign for', async () => {
    const pem = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await refused(['--sub', 'u'], { JWT_PUBLIC_KEY: pem }, /^gatehouse token: refused: JWT_PUBLIC_KEY is set/);
    await refused(
      ['--sub', 'u'],
      { JWT_JWKS_URL: 'https://idp.example/jwks.json' },
      /^gatehouse token: refused: JWT_JWKS_URL is set/,
    );
  });

  it('with a configuration the service would refuse, naming the problem', async () => {
    await refused(
      ['--sub', 'u'],
      { JWT_SECRET: 'short' },
      /invalid configuration:\n {2}- JWT_SECRET must be at least 32 bytes/,
    );
    await refused(
      ['--sub', 'u'],
      { JWT_SECRET: SECRET, JWT_MAX_LIFETIME: 'long' },
      /JWT_MAX_LIFETIME must be a duration from 60s to 365d/,
    );
  });

  it('claims the service would refuse: an empty team, a control character, an over-long sub', async () => {
    await refused(
      ['--sub', 'u', '--team', ''],
      { JWT_SECRET: SECRET },
      /refused: the service would refuse this token: the claim "team" must be a non-empty string/,
    );
    await refused(['--sub', 'u\u0007'], { JWT_SECRET: SECRET }, /the claim "sub" contains a control character/);
    await refused(['--sub', 'x'.repeat(257)], { JWT_SECRET: SECRET }, /needs a string `sub` of 1 to 256 characters/);
  });

  it('usage errors: no --sub, an unknown option, an argument', async () => {
    for (const argv of [[], ['--team', 't'], ['--sub', 'u', '--user', 'u'], ['--sub', 'u', 'extra'], ['--sub']]) {
      const r = await mint(argv, { JWT_SECRET: SECRET });
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toMatch(/^usage: gatehouse token --sub U/);
      expect(r.err).toMatch(
        /\ngatehouse token: (--sub is required|unknown option '--user'|unexpected argument 'extra'|option '--sub <value>' argument missing)\n$/,
      );
    }
  });
});

describe('the command', () => {
  beforeAll(ensureBuilt, 180_000);

  it('prints the token alone on stdout, so export T=$(gatehouse token ...) works', async () => {
    const dataDir = join(dir, 'process');
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          [CLI, 'token', '--sub', 'bob', '--team', 'support', '--role', 'approver'],
          { cwd: ROOT, env: serverEnv({ DATA_DIR: dataDir }), timeout: 30_000 },
          (err, stdout, stderr) => {
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
          },
        );
      },
    );
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/);
    expect(decode(stdout.trim()).claims).toMatchObject({ sub: 'bob', team: 'support', roles: ['approver'] });
    expect(stderr).toMatch(
      /^gatehouse token: a token for sub bob, team support, roles \[approver\], valid 1 h, signed with the development secret in /,
    );
  });
});
