// loadConfig: every variable validated at once, every problem reported together, the result frozen.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { DURATION_FORMAT } from '../src/policy/duration.js';
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
      production: false,
      port: 8080,
      host: '127.0.0.1',
      policyDir: './policies',
      shadowPolicyDir: null,
      policyEnv: null,
      claims: { team: 'team', agent: 'agent', roles: 'roles' },
      approverRole: 'approver',
      runtimeRole: 'runtime',
      adminRole: 'admin',
      bodyLimit: 1_048_576,
      logLevel: 'info',
      logArgs: false,
      databaseUrl: null,
      dataDir: '.data',
      approvalTtlMs: 86_400_000,
      grantTtlMs: 3_600_000,
      maxPendingApprovals: 100,
      dbPoolMax: 10,
      dbDeadlineMs: 2000,
    });
    expect(c.jwt).toMatchObject({
      secret: null,
      publicKey: null,
      algorithm: null,
      jwksUrl: null,
      jwksRefreshMs: 600_000,
      allowUnbound: false,
      clockToleranceSec: 30,
      maxLifetimeSec: 86_400,
    });
    expect(c.policyReaderRoles).toEqual(['admin', 'approver']);
    expect(c.connections).toEqual({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 15_000,
      keepAliveTimeoutMs: 72_000,
      maxConnections: 1024,
    });
    expect(c).toMatchObject({
      approvalMaxBytes: 65_536,
      deniedCooldownMs: 600_000,
      maxWaitsPerCaller: 20,
      maxWaits: 512,
    });
    expect(c).toMatchObject({ idempotencyMaxKeys: 1000, idempotencyMaxBytes: 1_048_576 });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.connections)).toBe(true);
    expect(Object.isFrozen(c.policyReaderRoles)).toBe(true);
    expect(Object.isFrozen(c.jwt)).toBe(true);
  });

  it('reads every variable', () => {
    const c = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      POLICY_DIR: '/p',
      SHADOW_POLICY_DIR: '/shadow',
      POLICY_ENV: 'prod',
      JWT_SECRET: SECRET,
      JWT_ISSUER: 'https://idp',
      JWT_AUDIENCE: 'gatehouse',
      JWT_CLOCK_TOLERANCE: '5',
      TEAM_CLAIM: 'grp',
      AGENT_CLAIM: 'azp',
      ROLES_CLAIM: 'scope',
      APPROVER_ROLE: 'ops',
      ADMIN_ROLE: 'root',
      BODY_LIMIT: '65536',
      LOG_LEVEL: 'warn',
      LOG_ARGS: 'true',
      DATABASE_URL: 'postgres://db/g',
      DATA_DIR: '/d',
      APPROVAL_TTL: '30m',
      GRANT_TTL: '90s',
      DB_POOL_MAX: '4',
      DB_DEADLINE_MS: '500',
      BUDGET_CONNECTIONS: '2',
      SHUTDOWN_GRACE_MS: '1000',
      MAX_PENDING_APPROVALS: '7',
      IDEMPOTENCY_MAX_KEYS: '50',
      IDEMPOTENCY_MAX_BYTES: '65536',
      JWT_MAX_LIFETIME: '3600',
      HEADERS_TIMEOUT: '5s',
      REQUEST_TIMEOUT: '20',
      KEEP_ALIVE_TIMEOUT: '620s',
      MAX_CONNECTIONS: '4096',
      POLICY_READER_ROLE: ' auditor , root',
      RUNTIME_ROLE: 'agent-runtime',
    });
    expect(c.connections).toEqual({
      headersTimeoutMs: 5000,
      requestTimeoutMs: 20_000,
      keepAliveTimeoutMs: 620_000,
      maxConnections: 4096,
    });
    expect(c.policyReaderRoles).toEqual(['auditor', 'root']);
    expect(c).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      policyDir: '/p',
      shadowPolicyDir: '/shadow',
      policyEnv: 'prod',
      claims: { team: 'grp', agent: 'azp', roles: 'scope' },
      approverRole: 'ops',
      runtimeRole: 'agent-runtime',
      adminRole: 'root',
      bodyLimit: 65536,
      logLevel: 'warn',
      logArgs: true,
      databaseUrl: 'postgres://db/g',
      dataDir: '/d',
      approvalTtlMs: 1_800_000,
      grantTtlMs: 90_000,
      maxPendingApprovals: 7,
      idempotencyMaxKeys: 50,
      idempotencyMaxBytes: 65_536,
      dbPoolMax: 4,
      dbDeadlineMs: 500,
      budgetConnections: 2,
      shutdownGraceMs: 1000,
    });
    expect(c.jwt).toMatchObject({
      secret: SECRET,
      algorithm: 'HS256',
      issuer: 'https://idp',
      audience: 'gatehouse',
      clockToleranceSec: 5,
      maxLifetimeSec: 3600,
    });
  });

  it('reports every problem at once, never the secret value', () => {
    const problems = problemsOf({
      PORT: 'http',
      BODY_LIMIT: '-1',
      LOG_LEVEL: 'loud',
      LOG_ARGS: 'yes',
      APPROVAL_TTL: 'soon',
      JWT_SECRET: 'short-secret-value',
      MAX_PENDING_APPROVALS: '0',
      IDEMPOTENCY_MAX_BYTES: '100',
    });
    expect(problems).toHaveLength(8);
    expect(problems).toContain('MAX_PENDING_APPROVALS must be an integer from 1 to 1000000');
    expect(problems).toContain('IDEMPOTENCY_MAX_BYTES must be an integer from 1024 to 1073741824');
    expect(problems.join('\n')).toMatch(/PORT/);
    expect(problems.join('\n')).toMatch(/JWT_SECRET must be at least 32 bytes/);
    expect(problems.join('\n')).not.toContain('short-secret-value');
  });

  it('USAGE_ROLE, USAGE_ANY_ROLE, USAGE_MAX_USD: the defaults, and a cap that is a plain decimal above 0', () => {
    expect(loadConfig({}).usage).toEqual({
      role: 'usage_reporter',
      anyRole: 'usage_billing',
      maxUsd: { text: '100', value: 100, written: '100' },
    });
    const set = loadConfig({ USAGE_ROLE: 'runtime', USAGE_ANY_ROLE: 'ledger', USAGE_MAX_USD: '2.50' });
    expect(set.usage).toEqual({
      role: 'runtime',
      anyRole: 'ledger',
      maxUsd: { text: '2.5', value: 2.5, written: '2.5' },
    });
    expect(loadConfig({ USAGE_MAX_USD: '999999999.000000000001' }).usage.maxUsd.text).toBe('999999999.000000000001');
    const rule =
      'USAGE_MAX_USD must be a decimal number above 0 and below 1000000000, with at most 12 digits after the point';
    for (const bad of [
      '0',
      '0.0',
      '-1',
      '1e3',
      '1e308',
      'Infinity',
      'NaN',
      '1000000000',
      '0.0000000000001',
      '01',
      '1.',
      '.5',
      'ten',
    ]) {
      expect(problemsOf({ USAGE_MAX_USD: bad }), bad).toEqual([rule]);
    }
  });

  it('DECISION_STORE: off by default; postgres needs DATABASE_URL; the queue bound and the retention', () => {
    expect(loadConfig({}).decisionStore).toBeNull();
    expect(loadConfig({}).auditorRole).toBe('auditor');
    expect(problemsOf({ DECISION_STORE: 'postgres' })).toEqual(['DECISION_STORE=postgres needs DATABASE_URL']);
    expect(problemsOf({ DECISION_STORE: 'file' })).toEqual(['DECISION_STORE must be off or postgres']);
    const url = 'postgres://gatehouse@db/gatehouse';
    expect(loadConfig({ DECISION_STORE: 'postgres', DATABASE_URL: url }).decisionStore).toEqual({
      queueMax: 10_000,
      retentionMs: 30 * 86_400_000,
    });
    const set = loadConfig({
      DECISION_STORE: 'postgres',
      DATABASE_URL: url,
      DECISION_QUEUE_MAX: '50',
      DECISION_RETENTION: '7d',
      AUDITOR_ROLE: 'audit',
    });
    expect([set.decisionStore, set.auditorRole]).toEqual([{ queueMax: 50, retentionMs: 7 * 86_400_000 }, 'audit']);
    expect(problemsOf({ DECISION_QUEUE_MAX: '0' })).toEqual([
      'DECISION_QUEUE_MAX must be an integer from 1 to 1000000',
    ]);
    expect(problemsOf({ DECISION_RETENTION: '2h' })[0]).toMatch(
      /^DECISION_RETENTION must be a duration from 1d to 3650d/,
    );
  });

  it('refuses both JWT_SECRET and JWT_PUBLIC_KEY', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    expect(
      problemsOf({ JWT_SECRET: SECRET, JWT_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString() }),
    ).toEqual(['set JWT_SECRET or JWT_PUBLIC_KEY, not both']);
  });

  it('derives the algorithm from the public key', () => {
    const pem = (k: ReturnType<typeof generateKeyPairSync>['publicKey']): string =>
      k.export({ type: 'spki', format: 'pem' }).toString();
    expect(
      loadConfig({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey) }).jwt.algorithm,
    ).toBe('RS256');
    expect(
      loadConfig({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey) }).jwt.algorithm,
    ).toBe('ES256');
    expect(loadConfig({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('ed25519').publicKey) }).jwt.algorithm).toBe('EdDSA');
    expect(
      problemsOf({ JWT_PUBLIC_KEY: pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey) })[0],
    ).toMatch(/JWT_PUBLIC_KEY/);
    expect(problemsOf({ JWT_PUBLIC_KEY: 'not a key' })[0]).toMatch(/JWT_PUBLIC_KEY/);
  });

  it('JWT_MAX_LIFETIME and JWT_CLOCK_TOLERANCE are durations in whole seconds; a bare number is seconds', () => {
    expect(loadConfig({ JWT_MAX_LIFETIME: '60' }).jwt.maxLifetimeSec).toBe(60);
    expect(loadConfig({ JWT_MAX_LIFETIME: '31536000' }).jwt.maxLifetimeSec).toBe(31_536_000);
    expect(loadConfig({ JWT_MAX_LIFETIME: '24h' }).jwt.maxLifetimeSec).toBe(86_400);
    expect(loadConfig({ JWT_MAX_LIFETIME: '365d' }).jwt.maxLifetimeSec).toBe(31_536_000);
    for (const v of ['59', '31536001', '366d', '1.5', '-60', '1e5', '59s']) {
      expect(problemsOf({ JWT_MAX_LIFETIME: v }), v).toEqual([
        expect.stringMatching(/^JWT_MAX_LIFETIME must be a duration from 60s to 365d: /),
      ]);
    }
    expect(problemsOf({ JWT_MAX_LIFETIME: '90500ms' })).toEqual([
      'JWT_MAX_LIFETIME must be a whole number of seconds (like 30s, 5m, 1h)',
    ]);
    expect(loadConfig({ JWT_CLOCK_TOLERANCE: '0' }).jwt.clockToleranceSec).toBe(0);
    expect(loadConfig({ JWT_CLOCK_TOLERANCE: '2m' }).jwt.clockToleranceSec).toBe(120);
    expect(problemsOf({ JWT_CLOCK_TOLERANCE: '301' })).toEqual([
      `JWT_CLOCK_TOLERANCE must be a duration from 1s to 300s, or 0 (off): ${DURATION_FORMAT} (301 is read as seconds; 301ms is milliseconds)`,
    ]);
  });

  it('trims JWT_PUBLIC_KEY once: the key it validated is the key the verifier uses', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const c = loadConfig({ JWT_PUBLIC_KEY: `   \n${pem}\n  ` });
    expect(c.jwt).toMatchObject({ publicKey: pem.trim(), algorithm: 'RS256' });
    // The configured key, as is, starts an app that verifies tokens signed by its private key.
    const t = await createTestApp({ key: c.jwt.publicKey!, algorithm: c.jwt.algorithm! });
    try {
      const now = Math.floor(Date.now() / 1000);
      const res = await post(
        t.app,
        '/decide',
        { tool: 'lookup_order', args: { order: 'A1' } },
        signJwt({ sub: 'a', iat: now, exp: now + 60 }, { alg: 'RS256', key: privateKey }),
      );
      expect(res.statusCode).toBe(200);
    } finally {
      await t.close();
    }
    expect(problemsOf({ JWT_PUBLIC_KEY: '  \n ' })).toEqual([
      'JWT_PUBLIC_KEY must be a PEM public key: RSA (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)',
    ]);
  });

  it('POLICY_READER_ROLE: unset, the admin and approver roles as configured; set, exactly its list', () => {
    expect(loadConfig({ ADMIN_ROLE: 'root', APPROVER_ROLE: 'ops' }).policyReaderRoles).toEqual(['root', 'ops']);
    expect(loadConfig({ ADMIN_ROLE: 'ops', APPROVER_ROLE: 'ops' }).policyReaderRoles).toEqual(['ops']);
    expect(loadConfig({ POLICY_READER_ROLE: 'auditor' }).policyReaderRoles).toEqual(['auditor']);
    expect(loadConfig({ POLICY_READER_ROLE: 'a,b,a' }).policyReaderRoles).toEqual(['a', 'b']);
    for (const v of ['admin,', ',', 'a,,b', ' , admin']) {
      expect(problemsOf({ POLICY_READER_ROLE: v }), v).toEqual([
        'POLICY_READER_ROLE must be a comma-separated list of role names, none of them empty',
      ]);
    }
  });

  it('connection timeouts are durations from 1 s to 1 h; MAX_CONNECTIONS an integer from 1', () => {
    for (const name of ['HEADERS_TIMEOUT', 'REQUEST_TIMEOUT', 'KEEP_ALIVE_TIMEOUT']) {
      // 30d would overflow Node's timers (2^31-1 ms) and fire at once; 500 ms is below a useful bound.
      for (const v of ['0', '500ms', '3601', '2h', '30d', 'soon', '-1s']) {
        const problems = problemsOf({ [name]: v, ...(name === 'HEADERS_TIMEOUT' ? { REQUEST_TIMEOUT: '1h' } : {}) });
        expect(problems, `${name}=${v}`).toContainEqual(
          expect.stringMatching(new RegExp(`^${name} must be a duration from 1s to 1h: `)),
        );
      }
    }
    expect(
      loadConfig({ HEADERS_TIMEOUT: '1s', REQUEST_TIMEOUT: '1h', KEEP_ALIVE_TIMEOUT: '3600' }).connections,
    ).toMatchObject({
      headersTimeoutMs: 1000,
      requestTimeoutMs: 3_600_000,
      keepAliveTimeoutMs: 3_600_000,
    });
    for (const v of ['0', '-1', '1.5', 'many', '1000001']) {
      expect(problemsOf({ MAX_CONNECTIONS: v }), v).toEqual(['MAX_CONNECTIONS must be an integer from 1 to 1000000']);
    }
  });

  it('refuses a HEADERS_TIMEOUT longer than REQUEST_TIMEOUT (Node would throw at start)', () => {
    expect(problemsOf({ HEADERS_TIMEOUT: '20s' })).toEqual(['HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT']);
    expect(problemsOf({ HEADERS_TIMEOUT: '10s', REQUEST_TIMEOUT: '5s' })).toEqual([
      'HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT',
    ]);
    expect(loadConfig({ HEADERS_TIMEOUT: '15s' }).connections.headersTimeoutMs).toBe(15_000); // equal is fine
  });

  it('the approval bounds: APPROVAL_MAX_BYTES, DENIED_COOLDOWN (0 turns it off), the wait caps below MAX_CONNECTIONS', () => {
    expect(
      loadConfig({ APPROVAL_MAX_BYTES: '1024', DENIED_COOLDOWN: '0', MAX_WAITS_PER_CALLER: '5', MAX_WAITS: '10' }),
    ).toMatchObject({
      approvalMaxBytes: 1024,
      deniedCooldownMs: 0,
      maxWaitsPerCaller: 5,
      maxWaits: 10,
    });
    expect(loadConfig({ DENIED_COOLDOWN: '90s' }).deniedCooldownMs).toBe(90_000);
    expect(
      [...problemsOf({ APPROVAL_MAX_BYTES: '1', DENIED_COOLDOWN: 'soon', MAX_WAITS_PER_CALLER: '0' })].sort(),
    ).toEqual([
      'APPROVAL_MAX_BYTES must be an integer from 2 to 16777216',
      `DENIED_COOLDOWN must be a duration from 1s to 7d, or 0 (off): ${DURATION_FORMAT}`,
      'MAX_WAITS_PER_CALLER must be an integer from 1 to 100000',
    ]);
    expect(problemsOf({ MAX_CONNECTIONS: '100', MAX_WAITS: '100' })).toEqual([
      'MAX_WAITS must be lower than MAX_CONNECTIONS (every wait holds a connection)',
    ]);
    expect(loadConfig({ MAX_CONNECTIONS: '100' }).maxWaits).toBe(50);
    expect(loadConfig({ MAX_CONNECTIONS: '3' }).maxWaits).toBe(1);
  });

  it('in production refuses to start without a JWT key or DATABASE_URL', () => {
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual([
      'NODE_ENV=production needs JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL',
      'NODE_ENV=production needs DATABASE_URL',
    ]);
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: SECRET, DATABASE_URL: 'postgres://db/g' }).production).toBe(
      true,
    );
  });
});

describe('production with a provider key: audience and issuer are required', () => {
  const pem = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const prod = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/g' };
  const unbound = (key: string, missing: string): string =>
    `NODE_ENV=production with ${key} needs ${missing}, so that tokens the provider mints for other applications are refused (or set JWT_ALLOW_UNBOUND=true to accept them)`;

  for (const [key, value] of [
    ['JWT_PUBLIC_KEY', pem],
    ['JWT_JWKS_URL', 'https://idp.example.com/.well-known/jwks.json'],
  ] as const) {
    it(`${key} without JWT_AUDIENCE or JWT_ISSUER refuses to start, naming what is missing`, () => {
      expect(problemsOf({ ...prod, [key]: value })).toEqual([unbound(key, 'JWT_AUDIENCE and JWT_ISSUER')]);
      expect(problemsOf({ ...prod, [key]: value, JWT_ISSUER: 'https://idp.example.com/' })).toEqual([
        unbound(key, 'JWT_AUDIENCE'),
      ]);
      expect(problemsOf({ ...prod, [key]: value, JWT_AUDIENCE: 'gatehouse' })).toEqual([unbound(key, 'JWT_ISSUER')]);
    });
    it(`${key} with both starts; JWT_ALLOW_UNBOUND=true is the explicit opt-out`, () => {
      expect(
        loadConfig({ ...prod, [key]: value, JWT_AUDIENCE: 'gatehouse', JWT_ISSUER: 'https://idp.example.com/' }).jwt,
      ).toMatchObject({
        audience: 'gatehouse',
        issuer: 'https://idp.example.com/',
        allowUnbound: false,
      });
      expect(loadConfig({ ...prod, [key]: value, JWT_ALLOW_UNBOUND: 'true' }).jwt).toMatchObject({
        audience: null,
        issuer: null,
        allowUnbound: true,
      });
    });
  }
  it("JWT_ALLOW_UNBOUND is true or false; an HS256 secret (this service's own) needs neither; outside production neither is required", () => {
    expect(problemsOf({ ...prod, JWT_PUBLIC_KEY: pem, JWT_ALLOW_UNBOUND: 'yes' })).toContain(
      'JWT_ALLOW_UNBOUND must be true or false',
    );
    expect(loadConfig({ ...prod, JWT_SECRET: SECRET }).jwt).toMatchObject({
      algorithm: 'HS256',
      audience: null,
      issuer: null,
    });
    expect(loadConfig({ JWT_PUBLIC_KEY: pem }).jwt).toMatchObject({ algorithm: 'EdDSA', audience: null, issuer: null });
  });
});

describe('JWT_JWKS_URL', () => {
  const bound = { JWT_AUDIENCE: 'gatehouse', JWT_ISSUER: 'https://idp.example.com/' };
  it('is read with its refresh interval (default 10m); no algorithm is fixed (each key pins its own)', () => {
    expect(loadConfig({ JWT_JWKS_URL: 'https://idp.example.com/jwks' }).jwt).toMatchObject({
      jwksUrl: 'https://idp.example.com/jwks',
      jwksRefreshMs: 600_000,
      algorithm: null,
      secret: null,
      publicKey: null,
    });
    expect(loadConfig({ JWT_JWKS_URL: 'https://idp.example.com/jwks', JWT_JWKS_REFRESH: '1m' }).jwt.jwksRefreshMs).toBe(
      60_000,
    );
    for (const v of ['5s', '2d', 'soon'])
      expect(problemsOf({ JWT_JWKS_URL: 'https://idp.example.com/jwks', JWT_JWKS_REFRESH: v }), v).toHaveLength(1);
    expect(problemsOf({ JWT_JWKS_REFRESH: '5s' })).toEqual([
      `JWT_JWKS_REFRESH must be a duration from 10s to 24h: ${DURATION_FORMAT}`,
    ]);
  });
  it('is refused with JWT_SECRET or JWT_PUBLIC_KEY', () => {
    const pem = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(problemsOf({ JWT_JWKS_URL: 'https://idp.example.com/jwks', JWT_SECRET: SECRET })).toEqual([
      'set JWT_JWKS_URL or JWT_SECRET, not both',
    ]);
    expect(problemsOf({ JWT_JWKS_URL: 'https://idp.example.com/jwks', JWT_PUBLIC_KEY: pem })).toEqual([
      'set JWT_JWKS_URL or JWT_PUBLIC_KEY, not both',
    ]);
  });
  it('production needs https, except to a loopback address; outside production http is allowed', () => {
    const prod = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/g', ...bound };
    expect(loadConfig({ ...prod, JWT_JWKS_URL: 'https://idp.example.com/jwks' }).jwt.jwksUrl).toBe(
      'https://idp.example.com/jwks',
    );
    for (const url of [
      'http://127.0.0.1:8081/jwks',
      'http://localhost/jwks',
      'http://[::1]:9/jwks',
      'http://127.1.2.3/jwks',
    ]) {
      expect(loadConfig({ ...prod, JWT_JWKS_URL: url }).jwt.jwksUrl, url).toBe(url);
    }
    for (const url of ['http://idp.example.com/jwks', 'http://10.0.0.1/jwks', 'http://127.0.0.1.example.com/jwks']) {
      expect(problemsOf({ ...prod, JWT_JWKS_URL: url }), url).toEqual([
        'NODE_ENV=production needs an https:// JWT_JWKS_URL (plain http only to a loopback address)',
      ]);
    }
    expect(loadConfig({ JWT_JWKS_URL: 'http://idp.internal/jwks' }).jwt.jwksUrl).toBe('http://idp.internal/jwks');
  });
  it('must be an absolute http(s) URL without credentials', () => {
    expect(problemsOf({ JWT_JWKS_URL: 'idp.example.com/jwks' })).toEqual([
      'JWT_JWKS_URL must be an absolute https:// URL',
    ]);
    expect(problemsOf({ JWT_JWKS_URL: 'file:///etc/jwks.json' })).toEqual(['JWT_JWKS_URL must be an https:// URL']);
    expect(problemsOf({ JWT_JWKS_URL: 'https://user:pw@idp.example.com/jwks' })).toEqual([
      'JWT_JWKS_URL must not carry credentials',
    ]);
  });
});

describe('sign-in (OIDC_ISSUER)', () => {
  const oidc = {
    OIDC_ISSUER: 'https://login.example.com',
    OIDC_CLIENT_ID: 'gatehouse',
    OIDC_CLIENT_SECRET: 'client-secret',
    PUBLIC_URL: 'https://gatehouse.example.com/',
  };
  const prod = { NODE_ENV: 'production', JWT_SECRET: SECRET, DATABASE_URL: 'postgres://db/gatehouse', ...oidc };

  it('is off by default; on, it reads the client, the scopes, the roles claim (default ROLES_CLAIM) and the session settings', () => {
    const off = loadConfig({});
    expect(off.oidc).toBeNull();
    expect(off.publicUrl).toBeNull();
    expect(off.session).toEqual({ secret: null, ttlMs: 8 * 3_600_000 });
    const on = loadConfig({ ...oidc, ROLES_CLAIM: 'groups' });
    expect(on.oidc).toEqual({
      issuer: 'https://login.example.com',
      clientId: 'gatehouse',
      clientSecret: 'client-secret',
      scopes: 'openid',
      rolesClaim: 'groups',
    });
    expect(on.publicUrl).toBe('https://gatehouse.example.com');
    expect(Object.isFrozen(on.oidc)).toBe(true);
    const full = loadConfig({
      ...oidc,
      OIDC_SCOPES: ' openid  profile groups ',
      OIDC_ROLES_CLAIM: 'gatehouse_roles',
      SESSION_SECRET: 's'.repeat(32),
      SESSION_TTL: '30m',
    });
    expect(full.oidc).toMatchObject({ scopes: 'openid profile groups', rolesClaim: 'gatehouse_roles' });
    expect(full.claims.roles).toBe('roles'); // bearer tokens keep ROLES_CLAIM
    expect(full.session).toEqual({ secret: 's'.repeat(32), ttlMs: 1_800_000 });
  });

  it('needs the client id and secret and PUBLIC_URL; its companions need OIDC_ISSUER', () => {
    expect(problemsOf({ OIDC_ISSUER: 'https://login.example.com' })).toEqual([
      'OIDC_ISSUER needs OIDC_CLIENT_ID',
      'OIDC_ISSUER needs OIDC_CLIENT_SECRET',
      'OIDC_ISSUER needs PUBLIC_URL (the redirect URI is PUBLIC_URL/auth/callback)',
    ]);
    expect(problemsOf({ OIDC_CLIENT_ID: 'x', OIDC_ROLES_CLAIM: 'groups' })).toEqual([
      'OIDC_CLIENT_ID is set but OIDC_ISSUER is not: set OIDC_ISSUER to turn sign-in on',
      'OIDC_ROLES_CLAIM is set but OIDC_ISSUER is not: set OIDC_ISSUER to turn sign-in on',
    ]);
  });

  it('checks the issuer, the scopes, PUBLIC_URL, SESSION_SECRET and SESSION_TTL, never echoing a secret', () => {
    expect(problemsOf({ ...oidc, OIDC_ISSUER: 'login.example.com' })).toEqual([
      "OIDC_ISSUER must be an absolute https:// URL (the identity provider's issuer identifier)",
    ]);
    expect(problemsOf({ ...oidc, OIDC_ISSUER: 'https://u:p@login.example.com' })).toEqual([
      'OIDC_ISSUER must not carry credentials',
    ]);
    expect(problemsOf({ ...oidc, OIDC_ISSUER: 'https://login.example.com/?tenant=1' })).toEqual([
      'OIDC_ISSUER must not have a query or a fragment',
    ]);
    expect(problemsOf({ ...oidc, OIDC_SCOPES: 'profile email' })).toEqual(['OIDC_SCOPES must include openid']);
    expect(problemsOf({ ...oidc, OIDC_SCOPES: 'openid "x"' })).toEqual([
      'OIDC_SCOPES must be scope names separated by spaces (RFC 6749 section 3.3)',
    ]);
    expect(problemsOf({ ...oidc, PUBLIC_URL: 'https://gatehouse.example.com/?a=1' })).toEqual([
      'PUBLIC_URL must not have a query or a fragment',
    ]);
    expect(problemsOf({ ...oidc, PUBLIC_URL: 'ftp://gatehouse.example.com' })).toEqual([
      'PUBLIC_URL must be an http:// or https:// URL',
    ]);
    const short = problemsOf({ ...oidc, SESSION_SECRET: 'too-short-secret' });
    expect(short).toEqual(['SESSION_SECRET must be at least 32 bytes']);
    expect(short.join()).not.toContain('too-short-secret');
    expect(problemsOf({ ...oidc, SESSION_TTL: '1m' })).toEqual([
      `SESSION_TTL must be a duration from 5m to 7d: ${DURATION_FORMAT}`,
    ]);
    // Outside production a plain-http provider and page are allowed (a provider on this machine).
    expect(
      loadConfig({ ...oidc, OIDC_ISSUER: 'http://idp.internal:8080', PUBLIC_URL: 'http://gatehouse.internal' }).oidc
        ?.issuer,
    ).toBe('http://idp.internal:8080');
  });

  it('in production: an https issuer and page (plain http to loopback only), and SESSION_SECRET', () => {
    expect(problemsOf(prod)).toEqual([
      'NODE_ENV=production with OIDC_ISSUER needs SESSION_SECRET (at least 32 bytes, the same on every replica)',
    ]);
    const withSecret = { ...prod, SESSION_SECRET: 's'.repeat(32) };
    expect(loadConfig(withSecret).oidc).not.toBeNull();
    expect(problemsOf({ ...withSecret, OIDC_ISSUER: 'http://login.example.com' })).toEqual([
      'NODE_ENV=production needs an https:// OIDC_ISSUER (plain http only to a loopback address)',
    ]);
    expect(problemsOf({ ...withSecret, PUBLIC_URL: 'http://gatehouse.example.com' })).toEqual([
      'NODE_ENV=production with OIDC_ISSUER needs an https:// PUBLIC_URL: the session cookie is Secure',
    ]);
    expect(
      loadConfig({ ...withSecret, OIDC_ISSUER: 'http://127.0.0.1:9000', PUBLIC_URL: 'http://localhost:8080' }).oidc,
    ).not.toBeNull();
  });
});

describe('durations: one rule for every setting whose name gives no unit', () => {
  // Every duration setting, with a value inside its range written as a bare number (seconds).
  const settings: Record<string, { bare: string; read: (c: ReturnType<typeof loadConfig>) => number }> = {
    APPROVAL_TTL: { bare: '3600', read: (c) => c.approvalTtlMs },
    GRANT_TTL: { bare: '600', read: (c) => c.grantTtlMs },
    DENIED_COOLDOWN: { bare: '60', read: (c) => c.deniedCooldownMs },
    HEADERS_TIMEOUT: { bare: '5', read: (c) => c.connections.headersTimeoutMs },
    REQUEST_TIMEOUT: { bare: '20', read: (c) => c.connections.requestTimeoutMs },
    KEEP_ALIVE_TIMEOUT: { bare: '90', read: (c) => c.connections.keepAliveTimeoutMs },
    JWT_JWKS_REFRESH: { bare: '300', read: (c) => c.jwt.jwksRefreshMs },
    SESSION_TTL: { bare: '3600', read: (c) => c.session.ttlMs },
    WEBHOOK_TIMEOUT: { bare: '10', read: (c) => c.webhooks.timeoutMs },
    WEBHOOK_RETRY_FOR: { bare: '7200', read: (c) => c.webhooks.retryForMs },
    WEBHOOK_RETRY_MIN: { bare: '2', read: (c) => c.webhooks.retryMinMs },
    WEBHOOK_RETRY_MAX: { bare: '600', read: (c) => c.webhooks.retryMaxMs },
    DECISION_RETENTION: { bare: '172800', read: (c) => c.decisionStore?.retentionMs ?? NaN },
    JWT_CLOCK_TOLERANCE: { bare: '10', read: (c) => c.jwt.clockToleranceSec * 1000 },
    JWT_MAX_LIFETIME: { bare: '3600', read: (c) => c.jwt.maxLifetimeSec * 1000 },
  };
  const base = { DECISION_STORE: 'postgres', DATABASE_URL: 'postgres://db/g' };

  for (const [name, { bare, read }] of Object.entries(settings)) {
    it(`${name}: a bare number is seconds, the same as with the unit s`, () => {
      expect(read(loadConfig({ ...base, [name]: bare }))).toBe(Number(bare) * 1000);
      expect(read(loadConfig({ ...base, [name]: `${bare}s` }))).toBe(Number(bare) * 1000);
    });
  }

  it('APPROVAL_TTL=3600 is an hour, not 3.6 seconds', () => {
    expect(loadConfig({ APPROVAL_TTL: '3600' }).approvalTtlMs).toBe(3_600_000);
    expect(loadConfig({ APPROVAL_TTL: '3600000ms' }).approvalTtlMs).toBe(3_600_000);
  });

  it('a value meant as milliseconds is out of range as seconds: refused at start, naming the variable and how it was read', () => {
    expect(problemsOf({ APPROVAL_TTL: '86400000', GRANT_TTL: '3600000', WEBHOOK_TIMEOUT: '5000' })).toEqual([
      `WEBHOOK_TIMEOUT must be a duration from 1s to 60s: ${DURATION_FORMAT} (5000 is read as seconds; 5000ms is milliseconds)`,
      `APPROVAL_TTL must be a duration from 1s to 30d: ${DURATION_FORMAT} (86400000 is read as seconds; 86400000ms is milliseconds)`,
      `GRANT_TTL must be a duration from 1s to 7d: ${DURATION_FORMAT} (3600000 is read as seconds; 3600000ms is milliseconds)`,
    ]);
  });

  it('anything else is refused naming the variable, never echoing text that is not a number', () => {
    for (const v of ['soon', '1w', '1.5h', '-5s', '10 s', '0s']) {
      const problems = problemsOf({ APPROVAL_TTL: v });
      expect(problems, v).toEqual([`APPROVAL_TTL must be a duration from 1s to 30d: ${DURATION_FORMAT}`]);
    }
  });

  it('settings whose name gives the unit (_MS, _SECONDS) take digits alone, in that unit', () => {
    expect(loadConfig({ DB_DEADLINE_MS: '500', SHUTDOWN_GRACE_MS: '1000', FAST_GRANT_SECONDS: '10' })).toMatchObject({
      dbDeadlineMs: 500,
      shutdownGraceMs: 1000,
      fastGrantSeconds: 10,
    });
    expect(problemsOf({ DB_DEADLINE_MS: '2s', SHUTDOWN_GRACE_MS: '10s', FAST_GRANT_SECONDS: '5s' })).toEqual([
      'FAST_GRANT_SECONDS must be a number of seconds from 0 to 3600, digits only (its name gives the unit)',
      'DB_DEADLINE_MS must be a number of milliseconds from 50 to 60000, digits only (its name gives the unit)',
      'SHUTDOWN_GRACE_MS must be a number of milliseconds from 0 to 600000, digits only (its name gives the unit)',
    ]);
  });
});

describe('WEBHOOKS, PUBLIC_URL and the delivery settings', () => {
  const secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
  const slackUrl = 'https://hooks.slack.com/services/T000/B000/very-secret-path';

  it('default to none, 5 s per attempt, retries for 24 h pausing 5 s doubling to 1 h', () => {
    const c = loadConfig({});
    expect(c.publicUrl).toBeNull();
    expect(c.webhooks).toEqual({
      endpoints: [],
      timeoutMs: 5000,
      retryForMs: 86_400_000,
      retryMinMs: 5000,
      retryMaxMs: 3_600_000,
    });
    expect(Object.isFrozen(c.webhooks.endpoints)).toBe(true);
  });

  it('reads a JSON array of endpoints: the format standard by default, the name from the host unless given, an event filter', () => {
    const c = loadConfig({
      PUBLIC_URL: 'https://gatehouse.example.com/approvals/',
      WEBHOOKS: JSON.stringify([
        { url: 'https://hooks.example.com/gatehouse', secret },
        { url: slackUrl, format: 'slack', events: ['approval.created', 'approval.expired'] },
        { url: 'https://hooks.example.com/other', secret: secret.slice('whsec_'.length), name: 'audit' },
      ]),
      WEBHOOK_TIMEOUT: '10s',
      WEBHOOK_RETRY_FOR: '3d',
      WEBHOOK_RETRY_MIN: '1s',
      WEBHOOK_RETRY_MAX: '30m',
    });
    expect(c.publicUrl).toBe('https://gatehouse.example.com/approvals');
    expect(c.webhooks).toEqual({
      endpoints: [
        {
          name: 'hooks.example.com',
          url: 'https://hooks.example.com/gatehouse',
          format: 'standard',
          secret,
          events: null,
        },
        {
          name: 'hooks.slack.com',
          url: slackUrl,
          format: 'slack',
          secret: null,
          events: ['approval.created', 'approval.expired'],
        },
        {
          name: 'audit',
          url: 'https://hooks.example.com/other',
          format: 'standard',
          secret: secret.slice('whsec_'.length),
          events: null,
        },
      ],
      timeoutMs: 10_000,
      retryForMs: 3 * 86_400_000,
      retryMinMs: 1000,
      retryMaxMs: 1_800_000,
    });
    expect(loadConfig({ PUBLIC_URL: 'http://127.0.0.1:8080' }).publicUrl).toBe('http://127.0.0.1:8080');
  });

  it('reports every problem of every entry at once, naming the entry and the key, never a secret or a URL', () => {
    const short = `whsec_${Buffer.alloc(16, 2).toString('base64')}`;
    const problems = problemsOf({
      NODE_ENV: 'production',
      JWT_SECRET: SECRET,
      DATABASE_URL: 'postgres://db/g',
      WEBHOOKS: JSON.stringify([
        { url: 'http://hooks.example.com/x', secret },
        { url: 'ftp://hooks.example.com/x', secret },
        { url: 'https://user:pw@hooks.example.com/x', secret },
        { url: 'https://a.example.com/', secret: short },
        { url: 'https://b.example.com/', secret: 'not base64!' },
        { url: 'https://c.example.com/' },
        { url: slackUrl, format: 'slack', secret },
        { url: 'https://d.example.com/', secret, events: ['approval.granted', 'approval.granted'] },
        { url: 'https://e.example.com/', secret, events: [] },
        { url: 'https://f.example.com/', secret, format: 'teams' },
        { url: 'https://g.example.com/', secret, name: 'two words' },
        { url: 'https://h.example.com/', secret, name: 'dup' },
        { url: 'https://i.example.com/', secret, name: 'dup' },
        { secret },
        { url: 'https://j.example.com/', secret, colour: 'red' },
        'https://k.example.com/',
      ]),
      PUBLIC_URL: 'https://gatehouse.example.com/?x=1',
      WEBHOOK_RETRY_MIN: '2h',
      WEBHOOK_RETRY_MAX: '1h',
      WEBHOOK_TIMEOUT: '2m',
      WEBHOOK_RETRY_FOR: '0',
    });
    expect(problems).toEqual([
      'PUBLIC_URL must not have a query or a fragment',
      'NODE_ENV=production needs an https:// WEBHOOKS[0].url (plain http only to a loopback address)',
      'WEBHOOKS[1].url must be an http:// or https:// URL',
      'WEBHOOKS[2].url must not carry credentials (the signature authenticates Gatehouse)',
      'WEBHOOKS[3].secret must be "whsec_" and the base64 of 24 to 64 random bytes (like whsec_ followed by the output of openssl rand -base64 32)',
      'WEBHOOKS[4].secret must be "whsec_" and the base64 of 24 to 64 random bytes (like whsec_ followed by the output of openssl rand -base64 32)',
      'WEBHOOKS[5].secret is required: a Standard Webhooks secret, "whsec_" and the base64 of 24 to 64 random bytes',
      'WEBHOOKS[6].secret must not be set with format "slack": Slack incoming webhooks are not signed',
      `WEBHOOKS[7].events must be a list, without repeats, of approval.created, approval.granted, approval.partially_granted, approval.denied, approval.expired, approval.cancelled, approval.consumed`,
      `WEBHOOKS[8].events must be a list, without repeats, of approval.created, approval.granted, approval.partially_granted, approval.denied, approval.expired, approval.cancelled, approval.consumed`,
      'WEBHOOKS[9].format must be "standard" or "slack"',
      'WEBHOOKS[10].name must be 1 to 64 of A-Z a-z 0-9 _ . : - [ ]',
      'WEBHOOKS[12] is named "dup" like an earlier entry: give each a distinct "name" (events are queued per name)',
      "WEBHOOKS[13].url is required: the receiver's http:// or https:// URL",
      'WEBHOOKS[14] has an unknown key "colour" (known: url, secret, format, events, name)',
      'WEBHOOKS[15] must be an object like {"url": "https://…", "secret": "whsec_…"}',
      `WEBHOOK_RETRY_MIN must be a duration from 1ms to 1h: ${DURATION_FORMAT}`,
      `WEBHOOK_TIMEOUT must be a duration from 1s to 60s: ${DURATION_FORMAT}`,
      `WEBHOOK_RETRY_FOR must be a duration from 1s to 30d: ${DURATION_FORMAT}`,
    ]);
    const text = problems.join('\n');
    for (const hidden of [
      secret.slice('whsec_'.length),
      short.slice('whsec_'.length),
      'not base64',
      'very-secret-path',
      'pw@',
    ])
      expect(text).not.toContain(hidden);
  });

  it('refuses WEBHOOKS that are not a JSON array (the parser is strict: no repeated key), and an entry whose host makes no name', () => {
    expect(problemsOf({ WEBHOOKS: '{"url": "https://x.example.com"}' })).toEqual([
      'WEBHOOKS must be a JSON array of objects like {"url": "https://…", "secret": "whsec_…"}',
    ]);
    const repeated = problemsOf({
      WEBHOOKS: `[{"url": "https://x.example.com", "secret": "${secret}", "secret": "${secret}"}]`,
    });
    expect(repeated).toEqual([
      expect.stringMatching(/^WEBHOOKS is not valid JSON: duplicate key at byte \d+ \(\/0\)$/),
    ]);
    expect(repeated.join()).not.toContain(secret.slice('whsec_'.length));
    expect(
      problemsOf({ WEBHOOKS: `[{"url": "https://x.example.com", "secret": ${JSON.stringify(secret)}` })[0],
    ).toMatch(/^WEBHOOKS is not valid JSON: /);
    const host = `${'a'.repeat(60)}.example.com`;
    expect(problemsOf({ WEBHOOKS: JSON.stringify([{ url: `https://${host}/`, secret }]) })).toEqual([
      'WEBHOOKS[0] needs a "name" (1 to 64 of A-Z a-z 0-9 _ . : - [ ]): its host does not make one',
    ]);
    expect(problemsOf({ WEBHOOK_RETRY_MIN: '10m', WEBHOOK_RETRY_MAX: '5m' })).toEqual([
      'WEBHOOK_RETRY_MIN must not be longer than WEBHOOK_RETRY_MAX',
    ]);
    for (const bad of ['gatehouse.example.com', 'ftp://gatehouse.example.com', 'https://u:p@gatehouse.example.com'])
      expect(problemsOf({ PUBLIC_URL: bad })).toHaveLength(1);
  });

  it('production allows plain http only to a loopback address; outside production any http', () => {
    const endpoints = (url: string) => JSON.stringify([{ url, secret }]);
    const prod = { NODE_ENV: 'production', JWT_SECRET: SECRET, DATABASE_URL: 'postgres://db/g' };
    expect(loadConfig({ ...prod, WEBHOOKS: endpoints('http://127.0.0.1:9000/hooks') }).webhooks.endpoints).toHaveLength(
      1,
    );
    expect(loadConfig({ ...prod, WEBHOOKS: endpoints('http://localhost:9000/hooks') }).webhooks.endpoints).toHaveLength(
      1,
    );
    expect(loadConfig({ WEBHOOKS: endpoints('http://hooks.internal/') }).webhooks.endpoints[0]?.name).toBe(
      'hooks.internal',
    );
  });
});
