// loadConfig: every variable validated at once, every problem reported together, the result frozen.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration } from '../src/config.js';
import { createTestApp, post, signJwt } from './helpers/app.js';

const SECRET = 'x'.repeat(32);

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the documented defaults for an empty environment', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      production: false, port: 8080, host: '127.0.0.1', policyDir: './policies', policyEnv: null,
      claims: { team: 'team', agent: 'agent', roles: 'roles' }, approverRole: 'approver', adminRole: 'admin',
      bodyLimit: 1_048_576, logLevel: 'info', logArgs: false, databaseUrl: null, dataDir: '.data',
      approvalTtlMs: 86_400_000, grantTtlMs: 3_600_000, maxPendingApprovals: 100, dbPoolMax: 10, dbDeadlineMs: 2000,
    });
    expect(c.jwt).toMatchObject({ secret: null, publicKey: null, algorithm: null, clockToleranceSec: 30, maxLifetimeSec: 86_400 });
    expect(c.policyReaderRoles).toEqual(['admin', 'approver']);
    expect(c.connections).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 15_000, keepAliveTimeoutMs: 72_000, maxConnections: 1024 });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.connections)).toBe(true);
    expect(Object.isFrozen(c.policyReaderRoles)).toBe(true);
    expect(Object.isFrozen(c.jwt)).toBe(true);
  });

  it('reads every variable', () => {
    const c = loadConfig({
      PORT: '9000', HOST: '0.0.0.0', POLICY_DIR: '/p', POLICY_ENV: 'prod', JWT_SECRET: SECRET, JWT_ISSUER: 'https://idp',
      JWT_AUDIENCE: 'gatehouse', JWT_CLOCK_TOLERANCE: '5', TEAM_CLAIM: 'grp', AGENT_CLAIM: 'azp', ROLES_CLAIM: 'scope',
      APPROVER_ROLE: 'ops', ADMIN_ROLE: 'root', BODY_LIMIT: '65536', LOG_LEVEL: 'warn', LOG_ARGS: 'true',
      DATABASE_URL: 'postgres://db/g', DATA_DIR: '/d', APPROVAL_TTL: '30m', GRANT_TTL: '90s', DB_POOL_MAX: '4',
      DB_DEADLINE_MS: '500', SHUTDOWN_GRACE_MS: '1000', MAX_PENDING_APPROVALS: '7', JWT_MAX_LIFETIME: '3600',
      HEADERS_TIMEOUT: '5s', REQUEST_TIMEOUT: '20000', KEEP_ALIVE_TIMEOUT: '620s', MAX_CONNECTIONS: '4096', POLICY_READER_ROLE: ' auditor , root',
    });
    expect(c.connections).toEqual({ headersTimeoutMs: 5000, requestTimeoutMs: 20_000, keepAliveTimeoutMs: 620_000, maxConnections: 4096 });
    expect(c.policyReaderRoles).toEqual(['auditor', 'root']);
    expect(c).toMatchObject({
      port: 9000, host: '0.0.0.0', policyDir: '/p', policyEnv: 'prod', claims: { team: 'grp', agent: 'azp', roles: 'scope' },
      approverRole: 'ops', adminRole: 'root', bodyLimit: 65536, logLevel: 'warn', logArgs: true, databaseUrl: 'postgres://db/g',
      dataDir: '/d', approvalTtlMs: 1_800_000, grantTtlMs: 90_000, maxPendingApprovals: 7, dbPoolMax: 4, dbDeadlineMs: 500, shutdownGraceMs: 1000,
    });
    expect(c.jwt).toMatchObject({ secret: SECRET, algorithm: 'HS256', issuer: 'https://idp', audience: 'gatehouse', clockToleranceSec: 5, maxLifetimeSec: 3600 });
  });

  it('reports every problem at once, never the secret value', () => {
    const problems = problemsOf({
      PORT: 'http', BODY_LIMIT: '-1', LOG_LEVEL: 'loud', LOG_ARGS: 'yes', APPROVAL_TTL: 'soon', JWT_SECRET: 'short-secret-value', MAX_PENDING_APPROVALS: '0',
    });
    expect(problems).toHaveLength(7);
    expect(problems).toContain('MAX_PENDING_APPROVALS must be an integer from 1 to 1000000');
    expect(problems.join('\n')).toMatch(/PORT/);
    expect(problems.join('\n')).toMatch(/JWT_SECRET must be at least 32 bytes/);
    expect(problems.join('\n')).not.toContain('short-secret-value');
  });

  it('refuses both JWT_SECRET and JWT_PUBLIC_KEY', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    expect(problemsOf({ JWT_SECRET: SECRET, JWT_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString() })).toEqual(['set JWT_SECRET or JWT_PUBLIC_KEY, not both']);
  });

  it('derives the algorithm from the public key', () => {
    const pem = (k: ReturnType<typeof generateKeyPairSync>['publicKey']): string => k.export({ type: 'spki', format: 'pem' }).toString();
    expect(loadConfig({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey) }).jwt.algorithm).toBe('RS256');
    expect(loadConfig({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey) }).jwt.algorithm).toBe('ES256');
    expect(loadConfig({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('ed25519').publicKey) }).jwt.algorithm).toBe('EdDSA');
    expect(problemsOf({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey) })[0]).toMatch(/JWT_PUBLIC_KEY/);
    expect(problemsOf({ JWT_PUBLIC_KEY: 'not a key' })[0]).toMatch(/JWT_PUBLIC_KEY/);
  });

  it('JWT_MAX_LIFETIME is whole seconds from 60 to 31536000 (one year)', () => {
    expect(loadConfig({ JWT_MAX_LIFETIME: '60' }).jwt.maxLifetimeSec).toBe(60);
    expect(loadConfig({ JWT_MAX_LIFETIME: '31536000' }).jwt.maxLifetimeSec).toBe(31_536_000);
    for (const v of ['59', '31536001', '24h', '1.5', '-60', '1e5']) {
      expect(problemsOf({ JWT_MAX_LIFETIME: v }), v).toEqual(['JWT_MAX_LIFETIME must be an integer from 60 to 31536000']);
    }
  });

  it('trims JWT_PUBLIC_KEY once: the key it validated is the key the verifier uses (audit F3)', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const c = loadConfig({ JWT_PUBLIC_KEY: `   \n${pem}\n  ` });
    expect(c.jwt).toMatchObject({ publicKey: pem.trim(), algorithm: 'RS256' });
    // The configured key, as is, starts an app that verifies tokens signed by its private key.
    const t = await createTestApp({ key: c.jwt.publicKey!, algorithm: c.jwt.algorithm! });
    try {
      const now = Math.floor(Date.now() / 1000);
      const res = await post(t.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, signJwt({ sub: 'a', iat: now, exp: now + 60 }, { alg: 'RS256', key: privateKey }));
      expect(res.statusCode).toBe(200);
    } finally {
      await t.close();
    }
    expect(problemsOf({ JWT_PUBLIC_KEY: '  \n ' })).toEqual(['JWT_PUBLIC_KEY must be a PEM public key: RSA (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)']);
  });

  it('POLICY_READER_ROLE: unset, the admin and approver roles as configured; set, exactly its list', () => {
    expect(loadConfig({ ADMIN_ROLE: 'root', APPROVER_ROLE: 'ops' }).policyReaderRoles).toEqual(['root', 'ops']);
    expect(loadConfig({ ADMIN_ROLE: 'ops', APPROVER_ROLE: 'ops' }).policyReaderRoles).toEqual(['ops']);
    expect(loadConfig({ POLICY_READER_ROLE: 'auditor' }).policyReaderRoles).toEqual(['auditor']);
    expect(loadConfig({ POLICY_READER_ROLE: 'a,b,a' }).policyReaderRoles).toEqual(['a', 'b']);
    for (const v of ['admin,', ',', 'a,,b', ' , admin']) {
      expect(problemsOf({ POLICY_READER_ROLE: v }), v).toEqual(['POLICY_READER_ROLE must be a comma-separated list of role names, none of them empty']);
    }
  });

  it('connection timeouts are durations from 1 s to 1 h; MAX_CONNECTIONS an integer from 1', () => {
    for (const name of ['HEADERS_TIMEOUT', 'REQUEST_TIMEOUT', 'KEEP_ALIVE_TIMEOUT']) {
      // 30d would overflow Node's timers (2^31-1 ms) and fire at once; 500 ms is below a useful bound.
      for (const v of ['0', '500', '2h', '30d', 'soon', '-1s']) {
        const problems = problemsOf({ [name]: v, ...(name === 'HEADERS_TIMEOUT' ? { REQUEST_TIMEOUT: '1h' } : {}) });
        expect(problems, `${name}=${v}`).toContain(`${name} must be a duration from 1s to 1h (like 10s, 2m, or a number of milliseconds)`);
      }
    }
    expect(loadConfig({ HEADERS_TIMEOUT: '1s', REQUEST_TIMEOUT: '1h', KEEP_ALIVE_TIMEOUT: '3600000' }).connections)
      .toMatchObject({ headersTimeoutMs: 1000, requestTimeoutMs: 3_600_000, keepAliveTimeoutMs: 3_600_000 });
    for (const v of ['0', '-1', '1.5', 'many', '1000001']) {
      expect(problemsOf({ MAX_CONNECTIONS: v }), v).toEqual(['MAX_CONNECTIONS must be an integer from 1 to 1000000']);
    }
  });

  it('refuses a HEADERS_TIMEOUT longer than REQUEST_TIMEOUT (Node would throw at start)', () => {
    expect(problemsOf({ HEADERS_TIMEOUT: '20s' })).toEqual(['HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT']);
    expect(problemsOf({ HEADERS_TIMEOUT: '10s', REQUEST_TIMEOUT: '5s' })).toEqual(['HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT']);
    expect(loadConfig({ HEADERS_TIMEOUT: '15s' }).connections.headersTimeoutMs).toBe(15_000); // equal is fine
  });

  it('in production refuses to start without a JWT key or DATABASE_URL', () => {
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual([
      'NODE_ENV=production needs JWT_SECRET or JWT_PUBLIC_KEY',
      'NODE_ENV=production needs DATABASE_URL',
    ]);
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: SECRET, DATABASE_URL: 'postgres://db/g' }).production).toBe(true);
  });
});

describe('parseDuration', () => {
  it.each([['90s', 90_000], ['30m', 1_800_000], ['24h', 86_400_000], ['7d', 604_800_000], ['250', 250], ['250ms', 250]])('%s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
  it.each(['', '0', '1w', '-5s', '1.5h', 'h'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeNull();
  });
});
