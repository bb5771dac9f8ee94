// Tokens verified against an identity provider's JWKS (JWT_JWKS_URL), served by a real HTTP server
// on loopback: keys fetched at start, picked by `kid`, rotated, refreshed on an unknown kid (rate
// limited), kept through an outage, each pinned to its own type and algorithm; 503 until the first
// good fetch. No wall-clock thresholds: intervals are small and the tests poll for the state.
import { createHmac, generateKeyPairSync, KeyObject, randomUUID } from 'node:crypto';
import { exportJWK, exportSPKI, generateSecret, importJWK, type CryptoKey } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJwksKeys, keySetOf, type JwksKeys, type JwksOptions } from '../../src/http/jwks.js';
import { createTestApp, post, type TestApp } from '../helpers/app.js';
import { signingKey, signWith, startJwksServer, until, type JwksServer, type SigningKey } from '../helpers/jwks.js';
import { startCountingServer } from '../helpers/http.js';
import { forgeJwt, signRawJwt } from '../helpers/jwt.js';

const LOOKUP = { tool: 'lookup_order', args: { order: 'A1' } };
const b64 = (o: unknown): string => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
const nowSec = (): number => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  sub: 'agent-1',
  team: 'support',
  agent: 'bot',
  roles: [],
  iat: nowSec(),
  exp: nowSec() + 3600,
  ...extra,
});

function expect401(res: LightMyRequestResponse): string {
  expect(res.statusCode, res.body).toBe(401);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status: 401, code: 'unauthorized' });
  expect(res.body).not.toMatch(/"decision"/);
  return (res.json() as { detail: string }).detail;
}

let rsa: SigningKey; // RS256, alg in the JWK
let ec: SigningKey; // ES256
let ed: SigningKey; // EdDSA
let rsaNoAlg: SigningKey; // an RSA JWK without `alg`
beforeAll(async () => {
  [rsa, ec, ed, rsaNoAlg] = await Promise.all([
    signingKey('RS256', 'rsa-1'),
    signingKey('ES256', 'ec-1'),
    signingKey('EdDSA', 'ed-1'),
    signingKey('RS256', 'rsa-noalg', { withAlg: false }),
  ]);
});

/** Everything one test opened, closed after it. */
const opened: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (let close = opened.pop(); close !== undefined; close = opened.pop()) await close();
});

interface Setup {
  server: JwksServer;
  keys: JwksKeys;
  t: TestApp;
}

/** A JWKS server publishing `published`, a key set over it (started), and an app using it. */
async function setup(
  published: SigningKey[],
  options: Partial<JwksOptions> = {},
  app: { issuer?: string; audience?: string } = {},
): Promise<Setup> {
  const server = await startJwksServer(published.map((k) => k.jwk));
  opened.push(() => server.close());
  const keys = createJwksKeys({
    url: server.url,
    refreshMs: 3_600_000,
    cooldownMs: 3_600_000,
    retryMs: 3_600_000,
    timeoutMs: 5_000,
    ...options,
  });
  opened.push(() => keys.close());
  await keys.start();
  const t = await createTestApp({ env: 'prod', jwks: keys, ...app });
  opened.push(() => t.close());
  return { server, keys, t };
}

const decide = (t: TestApp, token: string) => post(t.app, '/decide', LOOKUP, token);

describe('a token signed with a published key', () => {
  it('is accepted for each key type, the key picked by kid; the second use comes from the cache', async () => {
    const { t, server } = await setup([rsa, ec, ed]);
    const hits = server.hits();
    for (const key of [rsa, ec, ed]) {
      const token = await signWith(key, { sub: `user-${key.kid}` });
      for (let i = 0; i < 2; i++) {
        const res = await decide(t, token);
        expect(res.statusCode, `${key.kid}: ${res.body}`).toBe(200);
        expect(res.json()).toMatchObject({ decision: 'allow' });
      }
    }
    expect(server.hits()).toBe(hits); // known kids: no fetch
  });

  it('a token signed by another key under a published kid is 401', async () => {
    const { t } = await setup([rsa]);
    const impostor = await signingKey('RS256', 'rsa-1');
    expect401(await decide(t, await signWith(impostor)));
  });

  it('the post-verification checks apply: exp and sub required, lifetime bound, crit refused, identity claims', async () => {
    const { t } = await setup([rsa]);
    expect401(await decide(t, await signWith(rsa, { exp: undefined })));
    expect401(await decide(t, await signWith(rsa, { sub: undefined })));
    expect(expect401(await decide(t, await signWith(rsa, { exp: nowSec() + 86_400 * 30 })))).toBe(
      "the token's lifetime is longer than this server accepts",
    );
    expect(expect401(await decide(t, await signWith(rsa, { exp: nowSec() - 120 })))).toBe('the token has expired');
    expect(expect401(await decide(t, await signWith(rsa, { sub: 'alice\u200b' })))).toBe(
      'the claim "sub" contains an invisible format or separator character',
    );
    expect(expect401(await decide(t, await signWith(rsa, { roles: ['approver\u0000'] })))).toBe(
      'the claim "roles" contains a control character',
    );
    // crit: signed by hand (jose refuses to sign an unknown critical parameter).
    expect((await decide(t, forgeJwt(claims(), 'RS256', keyObject(rsa), { kid: 'rsa-1' }))).statusCode).toBe(200);
    expect401(await decide(t, forgeJwt(claims(), 'RS256', keyObject(rsa), { kid: 'rsa-1', crit: ['exp2'], exp2: 1 })));
    // Duplicate claim names (the last would win in JSON.parse) are refused before verification.
    const dup = `{"sub":"agent-1","roles":[],"roles":["admin"],"exp":${nowSec() + 600}}`;
    expect401(
      await decide(
        t,
        signRawJwt(JSON.stringify({ alg: 'RS256', kid: 'rsa-1', typ: 'JWT' }), dup, 'RS256', keyObject(rsa)),
      ),
    );
  });

  it('iss and aud, when configured, must match', async () => {
    const { t } = await setup([rsa], {}, { issuer: 'https://idp.example.com/', audience: 'gatehouse' });
    const ok = { iss: 'https://idp.example.com/', aud: 'gatehouse' };
    expect((await decide(t, await signWith(rsa, ok))).statusCode).toBe(200);
    expect((await decide(t, await signWith(rsa, { ...ok, aud: ['crm', 'gatehouse'] }))).statusCode).toBe(200);
    for (const bad of [
      { ...ok, aud: 'crm' },
      { ...ok, iss: 'https://evil.example.com/' },
      { iss: ok.iss },
      { aud: ok.aud },
    ]) {
      expect401(await decide(t, await signWith(rsa, bad)));
    }
  });
});

describe('rotation and unknown kids', () => {
  it('a key added to the JWKS is fetched when a token names its kid', async () => {
    const { t, server } = await setup([rsa]);
    const rotated = await signingKey('ES256', 'ec-rotated');
    server.publish([rsa.jwk, rotated.jwk]);
    const hits = server.hits();
    const res = await decide(t, await signWith(rotated));
    expect(res.statusCode, res.body).toBe(200);
    expect(server.hits()).toBe(hits + 1);
    expect((await decide(t, await signWith(rsa))).statusCode).toBe(200); // the old key still works
  });

  it('an unknown kid is 401, and a burst of random kids fetches the JWKS at most once per cooldown', async () => {
    const { t, server } = await setup([rsa]);
    const hits = server.hits();
    const attacker = await signingKey('RS256', 'unused');
    const burst = await Promise.all(
      Array.from({ length: 40 }, async () => decide(t, await signWith(attacker, {}, { kid: randomUUID() }))),
    );
    for (const res of burst) expect(expect401(res)).toBe("the token's key (`kid`) is not in the key set");
    expect(server.hits() - hits).toBeLessThanOrEqual(1);
    const after = server.hits();
    for (let i = 0; i < 10; i++) expect401(await decide(t, await signWith(attacker, {}, { kid: randomUUID() })));
    expect(server.hits()).toBe(after); // still inside the cooldown
    expect((await decide(t, await signWith(rsa))).statusCode).toBe(200);
  });

  it('a key withdrawn from the JWKS stops authenticating, even a token already cached', async () => {
    const { t, server, keys } = await setup([rsa, ec], { cooldownMs: 0 });
    const token = await signWith(ec);
    expect((await decide(t, token)).statusCode).toBe(200);
    expect((await decide(t, token)).statusCode).toBe(200); // cached
    server.publish([rsa.jwk]);
    const generation = keys.generation();
    await keys.refreshForUnknownKid();
    expect(keys.generation()).not.toBe(generation);
    expect(expect401(await decide(t, token))).toBe("the token's key (`kid`) is not in the key set");
    expect((await decide(t, await signWith(rsa))).statusCode).toBe(200);
  });

  it('the interval refresh picks up a rotation without any token asking', async () => {
    const { server, keys } = await setup([rsa], { refreshMs: 20 });
    const rotated = await signingKey('EdDSA', 'ed-rotated');
    server.publish([rotated.jwk]);
    await until('the rotated key', () => keys.hasKid('ed-rotated'));
    expect(keys.hasKid('rsa-1')).toBe(false);
  });
});

describe('an outage of the JWKS keeps the last good keys', () => {
  for (const mode of ['error', 'garbage', 'empty'] as const) {
    it(`the JWKS answering ${mode === 'error' ? '500' : mode === 'garbage' ? 'a body that is not JSON' : 'a set without keys'}`, async () => {
      const { t, server, keys } = await setup([rsa], { cooldownMs: 0 });
      server.setMode(mode);
      const hits = server.hits();
      // An unknown kid waits for a fetch, which fails: the known key still verifies new tokens.
      expect401(await decide(t, await signWith(ec)));
      expect(server.hits()).toBe(hits + 1);
      expect(keys.loaded()).toBe(true);
      const res = await decide(t, await signWith(rsa, { sub: `after-${mode}` }));
      expect(res.statusCode, res.body).toBe(200);
      expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ jwt_keys: 'ok' });
    });
  }

  it('the JWKS server stopped: tokens of known keys keep working, and the keys come back with it', async () => {
    const { t, server, keys } = await setup([rsa], { cooldownMs: 0 });
    await server.stop();
    expect401(await decide(t, await signWith(ec))); // the fetch fails: connection refused
    expect((await decide(t, await signWith(rsa, { sub: 'during-outage' }))).statusCode).toBe(200);
    server.publish([rsa.jwk, ec.jwk]);
    await server.start();
    expect((await decide(t, await signWith(ec))).statusCode).toBe(200);
    expect(keys.size()).toBe(2);
  });

  it('failed interval refreshes keep the keys', async () => {
    const { t, server } = await setup([rsa], { refreshMs: 20 });
    server.setMode('error');
    const hits = server.hits();
    await until('three failed refreshes', () => server.hits() >= hits + 3);
    expect((await decide(t, await signWith(rsa, { sub: 'after-failures' }))).statusCode).toBe(200);
  });
});

describe('algorithm confusion with a JWKS key', () => {
  it("HS256 keyed with the RSA key's public material (n, the JWK, the PEM) is 401", async () => {
    const { t } = await setup([rsa]);
    const n = String(rsa.jwk.n);
    const pem = await exportSPKI(await importPublic(rsa));
    const input = `${b64({ alg: 'HS256', kid: 'rsa-1', typ: 'JWT' })}.${b64(claims({ roles: ['admin', 'approver'] }))}`;
    for (const secret of [n, Buffer.from(n, 'base64url'), JSON.stringify(rsa.jwk), pem]) {
      const mac = createHmac('sha256', secret).update(input).digest('base64url');
      expect401(await decide(t, `${input}.${mac}`));
    }
  });

  it('a token claiming RS256 whose kid names an EC key is 401 (and ES256 naming the RSA key)', async () => {
    const { t } = await setup([rsa, ec]);
    expect401(await decide(t, await signWith(rsa, {}, { kid: 'ec-1' })));
    expect401(await decide(t, await signWith(ec, {}, { kid: 'rsa-1' })));
  });

  it('alg none, with or without a signature, is 401', async () => {
    const { t } = await setup([rsa]);
    for (const alg of ['none', 'None']) {
      const input = `${b64({ alg, kid: 'rsa-1', typ: 'JWT' })}.${b64(claims())}`;
      expect401(await decide(t, `${input}.`));
      expect401(await decide(t, `${input}.${(await signWith(rsa)).split('.')[2]}`));
    }
  });

  it('a JWK with `alg` pins it: the same RSA key signing RS512 or PS256 is 401; without `alg` its type decides', async () => {
    const { t } = await setup([rsa, rsaNoAlg]);
    const other = (alg: string, key: SigningKey): string => forgeJwt(claims(), alg, keyObject(key), { kid: key.kid });
    expect((await decide(t, other('RS256', rsa))).statusCode).toBe(200);
    expect401(await decide(t, other('RS512', rsa)));
    expect401(await decide(t, other('PS256', rsa)));
    expect((await decide(t, other('PS256', rsaNoAlg))).statusCode).toBe(200);
    expect((await decide(t, other('RS512', rsaNoAlg))).statusCode).toBe(200);
    expect401(await decide(t, forgeJwt(claims(), 'ES256', keyObject(ec), { kid: rsaNoAlg.kid })));
  });

  it('symmetric, encryption and private JWKs in the set are never used', async () => {
    const secret = await generateSecret('HS256', { extractable: true });
    const oct = { ...(await exportJWK(secret)), kid: 'sym', alg: 'HS256' };
    const enc = { ...rsa.jwk, kid: 'enc-1', use: 'enc' };
    const server = await startJwksServer([rsa.jwk, oct, enc]);
    opened.push(() => server.close());
    const keys = createJwksKeys({ url: server.url, refreshMs: 3_600_000, cooldownMs: 3_600_000 });
    opened.push(() => keys.close());
    await keys.start();
    expect(keys.size()).toBe(1);
    const t = await createTestApp({ env: 'prod', jwks: keys });
    opened.push(() => t.close());
    const input = `${b64({ alg: 'HS256', kid: 'sym', typ: 'JWT' })}.${b64(claims())}`;
    const mac = createHmac('sha256', Buffer.from(String(oct.k), 'base64url'))
      .update(input)
      .digest('base64url');
    expect401(await decide(t, `${input}.${mac}`));
    expect401(await decide(t, await signWith(rsa, {}, { kid: 'enc-1' })));
  });

  it('header parameters that fetch keys are not followed: a jku pointing elsewhere opens no connection', async () => {
    const { t } = await setup([rsa]);
    const listener = await startCountingServer();
    opened.push(() => listener.close());
    const attacker = await signingKey('RS256', 'rsa-1');
    expect401(
      await decide(t, await signWith(attacker, {}, { jku: `${listener.url}/jwks.json`, x5u: `${listener.url}/x` })),
    );
    expect(listener.connections()).toBe(0);
  });
});

describe('tokens without kid', () => {
  it('are accepted when the set holds exactly one key', async () => {
    const { t } = await setup([ec]);
    const res = await decide(t, await signWith(ec, {}, { kid: undefined }));
    expect(res.statusCode, res.body).toBe(200);
  });
  it('are 401 when the set holds several, even of different types', async () => {
    const { t } = await setup([rsa, ec]);
    expect(expect401(await decide(t, await signWith(ec, {}, { kid: undefined })))).toBe(
      'the token names no key (`kid`) and the key set holds several',
    );
    expect401(await decide(t, await signWith(rsa, {}, { kid: undefined })));
  });
  it('a kid that is not a string is 401', async () => {
    const { t } = await setup([rsa]);
    expect401(await decide(t, await signWith(rsa, {}, { kid: 7 })));
  });
});

describe('which JWKs of a document are used (keySetOf)', () => {
  it('a document that is not a JWK Set, or holds no usable key, is refused (the last good set stays)', () => {
    for (const doc of [null, 'keys', [], {}, { keys: 'x' }, { keys: {} }])
      expect(() => keySetOf(doc), JSON.stringify(doc)).toThrow('the document is not a JWK Set');
    expect(() => keySetOf({ keys: [] })).toThrow('the JWK Set holds no usable signature key');
  });

  it('only public signature keys of a supported type, curve and size, with a matching alg, are kept', () => {
    const node = (k: KeyObject): Record<string, unknown> => k.export({ format: 'jwk' }) as Record<string, unknown>;
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const x25519 = generateKeyPairSync('x25519');
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const secp256k1 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });
    const rejected: [string, unknown][] = [
      ['an RSA key under 2048 bits', { ...node(small.publicKey), kid: 'small' }],
      ['a private key', { ...node(small.privateKey), kid: 'private' }],
      ['a private RSA key of the right size', { ...node(KeyObject.from(rsa.privateKey)), kid: 'private-2048' }],
      ['an X25519 (key agreement) key', { ...node(x25519.publicKey), kid: 'x25519' }],
      ['a secp256k1 key', { ...node(secp256k1.publicKey), kid: 'k1' }],
      ['ES384 on a P-256 key', { ...node(p256.publicKey), kid: 'mismatch', alg: 'ES384' }],
      ['HS256 on an RSA key', { ...rsa.jwk, kid: 'hs', alg: 'HS256' }],
      ['RSA-OAEP (encryption) on an RSA key', { ...rsa.jwk, kid: 'oaep', alg: 'RSA-OAEP' }],
      ['use enc', { ...rsa.jwk, kid: 'enc', use: 'enc' }],
      ['key_ops without verify', { ...rsa.jwk, kid: 'ops', key_ops: ['encrypt'] }],
      ['a numeric kid', { ...rsa.jwk, kid: 7 }],
      ['an unknown kty', { kty: 'AKP', alg: 'ML-DSA-44', pub: 'AA', kid: 'pq' }],
      ['an oct key', { kty: 'oct', k: 'c2VjcmV0', kid: 'oct' }],
      ['material that is not a key', { kty: 'RSA', n: 'AQAB', e: 'AQAB', kid: 'junk' }],
      ['not an object', 'rsa-1'],
    ];
    for (const [name, jwk] of rejected) {
      expect(keySetOf({ keys: [rsa.jwk, jwk] }).keys, name).toHaveLength(1);
    }
    const kept = keySetOf({
      keys: [rsa.jwk, ec.jwk, ed.jwk, rsaNoAlg.jwk, { ...node(p256.publicKey), kid: 'verify-op', key_ops: ['verify'] }],
    });
    expect(kept.keys.map((k) => k.kid)).toEqual(['rsa-1', 'ec-1', 'ed-1', 'rsa-noalg', 'verify-op']);
  });
});

describe('before the first good fetch', () => {
  it('/readyz is 503 saying the keys are not loaded, tokens are 503 with Retry-After; both recover once the JWKS answers', async () => {
    const server = await startJwksServer([rsa.jwk]);
    opened.push(() => server.close());
    server.setMode('error');
    const keys = createJwksKeys({ url: server.url, refreshMs: 3_600_000, retryMs: 20 });
    opened.push(() => keys.close());
    expect(await keys.start()).toBe(false);
    const t = await createTestApp({ env: 'prod', jwks: keys, database: true });
    opened.push(() => t.close());
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ status: 'not_ready', jwt_keys: 'not_loaded', database: 'ok' });
    const token = await signWith(rsa);
    const res = await decide(t, token);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.json()).toMatchObject({
      status: 503,
      code: 'unavailable',
      detail: 'the token signing keys (JWT_JWKS_URL) are not loaded yet; retry',
    });
    // A missing header is still the caller's fault.
    expect((await t.app.inject({ method: 'POST', url: '/decide' })).statusCode).toBe(401);
    const hits = server.hits();
    await until('retries', () => server.hits() >= hits + 2); // retried in the background
    server.setMode('ok');
    await until('/readyz 200', async () => (await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({
      status: 'ready',
      jwt_keys: 'ok',
    });
    expect((await decide(t, token)).statusCode).toBe(200);
  });

  it('an unreachable JWKS: start() resolves false and the set stays not loaded', async () => {
    const server = await startJwksServer([rsa.jwk]);
    const url = server.url;
    await server.close();
    const keys = createJwksKeys({ url, refreshMs: 3_600_000, retryMs: 3_600_000 });
    opened.push(() => keys.close());
    expect(await keys.start()).toBe(false);
    expect(keys.loaded()).toBe(false);
    expect(keys.size()).toBe(0);
  });
});

describe('typ and iat on the JWKS path', () => {
  it('typ JWT or at+jwt (any case, application/ prefix allowed) or none is accepted; any other is 401', async () => {
    const { t } = await setup([rsa]);
    for (const typ of [
      'JWT',
      'jwt',
      'at+jwt',
      'AT+JWT',
      'application/at+jwt',
      'application/jwt',
      'Application/JWT',
      undefined,
    ]) {
      const res = await decide(t, await signWith(rsa, {}, { typ }));
      expect(res.statusCode, `typ ${String(typ)}: ${res.body}`).toBe(200);
    }
    for (const typ of [
      'JOSE',
      'logout+jwt',
      'secevent+jwt',
      'application/json',
      'jwt ',
      '',
      'at+jwt+jwt',
      'text/jwt',
      'JWT\u0000',
    ]) {
      expect(expect401(await decide(t, await signWith(rsa, {}, { typ }))), `typ ${typ}`).toBe(
        "the token header's `typ` must be JWT or at+jwt",
      );
    }
    expect401(await decide(t, await signWith(rsa, {}, { typ: 1 })));
  });

  it('iat must be a NumericDate not later than now plus the clock tolerance', async () => {
    const { t } = await setup([rsa]);
    expect((await decide(t, await signWith(rsa, { iat: nowSec() + 10 }))).statusCode).toBe(200); // within 30 s
    expect((await decide(t, await signWith(rsa, { iat: undefined }))).statusCode).toBe(200);
    for (const iat of [nowSec() + 3600, nowSec() + 120, String(nowSec()), -1, null, [nowSec()], true]) {
      expect401(await decide(t, await signWith(rsa, { iat })));
    }
  });
});

/** The private key as a node:crypto KeyObject, to sign what jose will not (other algorithms, crit). */
function keyObject(key: SigningKey): KeyObject {
  return KeyObject.from(key.privateKey);
}

async function importPublic(key: SigningKey): Promise<CryptoKey> {
  return (await importJWK(key.jwk, key.alg)) as CryptoKey;
}
