// Authentication under attack (RFC 8725).
// Every forged, confused, stale, malformed or misplaced token answers 401 problem+json: never a
// decision, never a 500, never an outbound connection. test/http/auth.test.ts has the basic cases;
// this file adds the variants the catalogue names that it does not cover.
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, bearer, createTestApp, keyPairs, post, type TestApp } from '../helpers/app.js';
import {
  expectPrototypeClean,
  expectUnauthorized,
  listenLoopback,
  rawHttp,
  rawPost,
  startCountingServer,
  type AnyResponse,
  type CountingServer,
} from '../helpers/http.js';
import { b64url, claimSet, forgeJwt, jwsSignature, nowSec, signRawJwt } from '../helpers/jwt.js';

const LOOKUP = { tool: 'lookup_order', args: { order: 'A1' } };
const keys = keyPairs();
const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
const attackerRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const attackerEc = generateKeyPairSync('ec', { namedCurve: 'P-256' });

const spkiPem = (k: KeyObject): string => String(k.export({ type: 'spki', format: 'pem' }));
const spkiDer = (k: KeyObject): Buffer => k.export({ type: 'spki', format: 'der' });

let hs: TestApp; // HS256 with the test secret
let rs: TestApp; // RS256 with keys.rsa
let es: TestApp; // ES256 with keys.ec
beforeAll(async () => {
  [hs, rs, es] = await Promise.all([
    createTestApp({ env: 'prod' }),
    createTestApp({ env: 'prod', key: spkiPem(keys.rsa.publicKey), algorithm: 'RS256' }),
    createTestApp({ env: 'prod', key: spkiPem(keys.ec.publicKey), algorithm: 'ES256' }),
  ]);
});
afterAll(async () => {
  await Promise.all([hs?.close(), rs?.close(), es?.close()]);
});
afterEach(() => expectPrototypeClean());

const decide = (t: TestApp, tok: string) => post(t.app, '/decide', LOOKUP, tok);

/** 401 problem+json, nothing decided. */
function expect401(res: AnyResponse): void {
  expectUnauthorized(res);
  expect(res.body).not.toMatch(/"decision"/);
}

describe('controls: each app accepts its own correctly signed token', () => {
  it('HS256, RS256, ES256', async () => {
    expect((await decide(hs, forgeJwt(claimSet(), 'HS256', SECRET))).statusCode).toBe(200);
    expect((await decide(rs, forgeJwt(claimSet(), 'RS256', keys.rsa.privateKey))).statusCode).toBe(200);
    expect((await decide(es, forgeJwt(claimSet(), 'ES256', keys.ec.privateKey))).statusCode).toBe(200);
  });
});

describe('alg none in every case variant, with empty and non-empty signatures', () => {
  const admin = claimSet({ roles: ['admin', 'approver'] });
  const variants = ['none', 'None', 'NONE', 'nOnE'];
  const signatures: [string, (input: string) => Buffer][] = [
    ['an empty signature', () => Buffer.alloc(0)],
    ['the HS256 MAC of the input', (input) => jwsSignature('HS256', input, SECRET)],
    ['garbage bytes', () => Buffer.from('AAAAAAAA')],
  ];
  for (const alg of variants) {
    for (const [sigName, sig] of signatures) {
      for (const [appName, app] of [
        ['HS256', () => hs],
        ['RS256', () => rs],
        ['ES256', () => es],
      ] as const) {
        it(`alg ${JSON.stringify(alg)} with ${sigName} → 401 on the ${appName} app`, async () => {
          const header = JSON.stringify({ alg, typ: 'JWT' });
          const input = `${b64url(header)}.${b64url(JSON.stringify(admin))}`;
          expect401(await decide(app(), `${input}.${b64url(sig(input))}`));
        });
      }
    }
  }
  const odd: [string, unknown][] = [
    ['missing', undefined],
    ['empty', ''],
    ['null', null],
    ['an array ["HS256"]', ['HS256']],
    ['lowercase hs256', 'hs256'],
    ['"HS256 " (trailing space)', 'HS256 '],
    ['"HS256\\u0000"', 'HS256\u0000'],
    ['a number', 256],
  ];
  for (const [name, alg] of odd) {
    it(`alg ${name}, MAC'd with the real secret → 401`, async () => {
      const header = JSON.stringify(alg === undefined ? { typ: 'JWT' } : { alg, typ: 'JWT' });
      const input = `${b64url(header)}.${b64url(JSON.stringify(admin))}`;
      expect401(await decide(hs, `${input}.${b64url(jwsSignature('HS256', input, SECRET))}`));
    });
  }
});

describe('HS/RS confusion: the public key, in every encoding, used as an HMAC secret', () => {
  const encodings = (pub: KeyObject, rsa: boolean): [string, string | Buffer][] => {
    const pem = spkiPem(pub);
    const der = spkiDer(pub);
    const list: [string, string | Buffer][] = [
      ['SPKI PEM', pem],
      ['SPKI PEM without the trailing newline', pem.trimEnd()],
      ['SPKI PEM with an extra trailing newline', `${pem}\n`],
      ['SPKI PEM with CRLF line ends', pem.replace(/\n/g, '\r\n')],
      ['SPKI PEM with leading spaces', `   ${pem}`],
      ['SPKI PEM with a leading newline and tab', `\n\t${pem}`],
      ['SPKI DER, base64 text', der.toString('base64')],
      ['SPKI DER, base64url text', der.toString('base64url')],
      ['SPKI DER, raw bytes', der],
      ['the base64 body of the PEM (no armour)', pem.replace(/-----[^-]+-----/g, '').replace(/\s/g, '')],
      ['JWK JSON', JSON.stringify(pub.export({ format: 'jwk' }))],
    ];
    if (rsa) {
      const pkcs1 = String(pub.export({ type: 'pkcs1', format: 'pem' }));
      list.push(
        ['PKCS#1 PEM (BEGIN RSA PUBLIC KEY)', pkcs1],
        ['PKCS#1 PEM with leading whitespace', `  \n${pkcs1}`],
        ['PKCS#1 PEM without the trailing newline', pkcs1.trimEnd()],
        ['PKCS#1 DER, base64 text', pub.export({ type: 'pkcs1', format: 'der' }).toString('base64')],
      );
    }
    return list;
  };
  for (const [appName, app, pub, rsa] of [
    ['RS256', () => rs, keys.rsa.publicKey, true],
    ['ES256', () => es, keys.ec.publicKey, false],
  ] as const) {
    for (const [encName, secret] of encodings(pub, rsa)) {
      for (const alg of ['HS256', 'HS384', 'HS512']) {
        it(`${appName} app: ${alg} keyed with the ${encName} → 401`, async () => {
          expect401(await decide(app(), forgeJwt(claimSet({ roles: ['approver'] }), alg, secret)));
        });
      }
    }
  }

  describe('an app whose configured key has leading whitespace or is PKCS#1 (CVE-2026-34950)', () => {
    const pkcs1 = String(keys.rsa.publicKey.export({ type: 'pkcs1', format: 'pem' }));
    const configured: [string, string][] = [
      ['SPKI PEM with leading whitespace', `  \n\t${spkiPem(keys.rsa.publicKey)}`],
      ['PKCS#1 PEM', pkcs1],
      ['PKCS#1 PEM with leading whitespace', `\n  ${pkcs1}`],
    ];
    for (const [name, key] of configured) {
      it(`${name}: either refuses to start, or verifies RS256 and refuses HS256 keyed with that text`, async () => {
        let app: TestApp | null = null;
        try {
          app = await createTestApp({ env: 'prod', key, algorithm: 'RS256' });
        } catch {
          return; // refusing to start with the key is fail-closed
        }
        try {
          expect((await decide(app, forgeJwt(claimSet(), 'RS256', keys.rsa.privateKey))).statusCode).toBe(200);
          for (const secret of [key, key.trim(), spkiPem(keys.rsa.publicKey)]) {
            expect401(await decide(app, forgeJwt(claimSet(), 'HS256', secret)));
          }
        } finally {
          await app.close();
        }
      });
    }
  });
});

describe('validly signed tokens of an algorithm the server did not pin', () => {
  const rsa = keys.rsa.privateKey;
  const signed: [string, string, string | KeyObject][] = [
    ['HS384 with the secret', 'HS384', SECRET],
    ['HS512 with the secret', 'HS512', SECRET],
    ['RS256', 'RS256', rsa],
    ['RS512', 'RS512', rsa],
    ['PS256', 'PS256', rsa],
    ['ES256', 'ES256', keys.ec.privateKey],
    ['ES384 (P-384)', 'ES384', p384.privateKey],
    ['EdDSA', 'EdDSA', keys.ed.privateKey],
  ];
  for (const [name, alg, key] of signed) {
    it(`HS256 app: ${name} → 401`, async () => {
      expect401(await decide(hs, forgeJwt(claimSet(), alg, key)));
    });
  }
  for (const alg of ['RS384', 'RS512', 'PS256', 'PS384', 'PS512']) {
    it(`RS256 app: ${alg} signed with the app's own RSA key → 401`, async () => {
      expect401(await decide(rs, forgeJwt(claimSet(), alg, rsa)));
    });
  }
  it('ES256 app: ES384 signed with a P-384 key, EdDSA, RS256 → 401', async () => {
    expect401(await decide(es, forgeJwt(claimSet(), 'ES384', p384.privateKey)));
    expect401(await decide(es, forgeJwt(claimSet(), 'EdDSA', keys.ed.privateKey)));
    expect401(await decide(es, forgeJwt(claimSet(), 'RS256', rsa)));
  });
  it('ES256 app: an ES256 header over an ES384-style (DER) signature → 401', async () => {
    const input = `${b64url(JSON.stringify({ alg: 'ES256', typ: 'JWT' }))}.${b64url(JSON.stringify(claimSet()))}`;
    const der = createSign('sha256').update(input).sign(keys.ec.privateKey); // DER, not IEEE P1363
    expect401(await decide(es, `${input}.${b64url(der)}`));
  });
});

describe('time claims with the 30 s tolerance', () => {
  const at = (extra: Record<string, unknown>) => forgeJwt(claimSet(extra), 'HS256', SECRET);
  it('exp = now − 45 s → 401', async () => {
    expect401(await decide(hs, at({ exp: nowSec() - 45 })));
  });
  it('exp = now − 25 s → accepted (inside the tolerance: proves seconds, not milliseconds)', async () => {
    const res = await decide(hs, at({ exp: nowSec() - 25 }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ decision: 'allow' });
  });
  it('nbf = now + 45 s → 401', async () => {
    expect401(await decide(hs, at({ nbf: nowSec() + 45 })));
  });
  it('nbf = now + 25 s → accepted', async () => {
    expect((await decide(hs, at({ nbf: nowSec() + 25 }))).statusCode).toBe(200);
  });
  it('exp missing → 401 (also with nbf and iat present)', async () => {
    const c = claimSet({ nbf: nowSec() - 10 });
    delete c.exp;
    expect401(await decide(hs, forgeJwt(c, 'HS256', SECRET)));
  });
  const badTypes: [string, unknown][] = [
    ['a string of a future time', '9999999999'],
    ['a numeric string with spaces', ` ${nowSec() + 3600} `],
    ['null', null],
    ['true', true],
    ['an array', [nowSec() + 3600]],
    ['an object', { value: nowSec() + 3600 }],
  ];
  for (const [name, exp] of badTypes) {
    it(`exp as ${name} → 401`, async () => {
      expect401(await decide(hs, at({ exp })));
    });
  }
  it('nbf as a string → 401', async () => {
    expect401(await decide(hs, at({ nbf: String(nowSec() - 10) })));
  });
  it('exp = now − 45 s on the RS256 app too → 401', async () => {
    expect401(await decide(rs, forgeJwt(claimSet({ exp: nowSec() - 45 }), 'RS256', keys.rsa.privateKey)));
  });
  it('exp = 1e20, or in milliseconds → 401: longer than JWT_MAX_LIFETIME (catalogue A-4) — never 500', async () => {
    expect401(await decide(hs, at({ exp: 1e20 })));
    expect401(await decide(hs, at({ exp: Date.now() + 60_000 })));
  });
  it('exp = 1e400 (Infinity to JSON.parse) → 401: the payload is not strict JSON', async () => {
    const payload = JSON.stringify(claimSet()).replace(/"exp":\d+/, '"exp":1e400');
    expect(payload).toContain('1e400');
    expect401(await decide(hs, signRawJwt(JSON.stringify({ alg: 'HS256', typ: 'JWT' }), payload, 'HS256', SECRET)));
  });
  it('exp = -1e400 and exp = 0 → 401', async () => {
    const payload = JSON.stringify(claimSet()).replace(/"exp":\d+/, '"exp":-1e400');
    expect401(await decide(hs, signRawJwt(JSON.stringify({ alg: 'HS256', typ: 'JWT' }), payload, 'HS256', SECRET)));
    expect401(await decide(hs, at({ exp: 0 })));
  });
});

describe('issuer and audience variants, when configured', () => {
  let ia: TestApp;
  beforeAll(async () => {
    ia = await createTestApp({ env: 'prod', issuer: 'https://idp.example.com', audience: 'gatehouse' });
  });
  afterAll(async () => ia?.close());
  const ok = { iss: 'https://idp.example.com', aud: 'gatehouse' };
  const with_ = (extra: Record<string, unknown>) => forgeJwt(claimSet({ ...ok, ...extra }), 'HS256', SECRET);

  it('control: the exact iss and aud are accepted', async () => {
    expect((await decide(ia, with_({}))).statusCode).toBe(200);
  });
  const bad: [string, Record<string, unknown>][] = [
    ['iss a substring of ours', { iss: 'idp.example.com' }],
    ['iss a prefix of ours', { iss: 'https://idp.example' }],
    ['iss where "." would match as a regex', { iss: 'https://idpXexample.com' }],
    ['iss in upper case', { iss: 'HTTPS://IDP.EXAMPLE.COM' }],
    ['iss with a trailing space', { iss: 'https://idp.example.com ' }],
    ['iss with a path', { iss: 'https://idp.example.com/realms/x' }],
    ['iss empty', { iss: '' }],
    ['iss null', { iss: null }],
    ['iss an array holding ours and another', { iss: ['https://idp.example.com', 'https://evil.example.com'] }],
    ['iss an object', { iss: { value: 'https://idp.example.com' } }],
    ['aud a prefix of ours', { aud: 'gate' }],
    ['aud with a suffix', { aud: 'gatehouse-admin' }],
    ['aud with a prefix', { aud: 'xgatehouse' }],
    ['aud with a trailing slash', { aud: 'gatehouse/' }],
    ['aud in upper case', { aud: 'GATEHOUSE' }],
    ['aud a number', { aud: 1 }],
    ['aud null', { aud: null }],
    ['aud an empty array', { aud: [] }],
    ['aud an array of numbers', { aud: [1, 2] }],
    ['aud an array with a near miss', { aud: ['gatehouse ', 'Gatehouse'] }],
    ['aud an object', { aud: { gatehouse: true } }],
  ];
  for (const [name, extra] of bad) {
    it(`${name} → 401`, async () => {
      expect401(await decide(ia, with_(extra)));
    });
  }
  it('iss and aud both missing → 401', async () => {
    expect401(await decide(ia, forgeJwt(claimSet(), 'HS256', SECRET)));
  });
  it('the app without iss/aud configured ignores them (control)', async () => {
    expect((await decide(hs, forgeJwt(claimSet({ iss: 'anything', aud: 'other' }), 'HS256', SECRET))).statusCode).toBe(
      200,
    );
  });
});

describe('key-locating headers are never followed', () => {
  let listener: CountingServer;
  beforeAll(async () => {
    listener = await startCountingServer(
      JSON.stringify({
        keys: [{ ...attackerRsa.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' }],
      }),
    );
  });
  afterAll(async () => listener?.close());

  const attackerJwk = (k: KeyObject) => k.export({ format: 'jwk' });
  const cases: [string, () => TestApp, () => string][] = [
    [
      'jku → attacker JWKS, RS256 signed by the attacker',
      () => rs,
      () => forgeJwt(claimSet(), 'RS256', attackerRsa.privateKey, { jku: `${listener.url}/jwks.json`, kid: 'k1' }),
    ],
    [
      'x5u → attacker URL, RS256 signed by the attacker',
      () => rs,
      () => forgeJwt(claimSet(), 'RS256', attackerRsa.privateKey, { x5u: `${listener.url}/cert.pem` }),
    ],
    [
      'jku on the HS256 app, HS256 with an attacker secret',
      () => hs,
      () => forgeJwt(claimSet(), 'HS256', 'attacker-secret-attacker-secret-0123', { jku: `${listener.url}/jwks.json` }),
    ],
    [
      'jku on the ES256 app, ES256 signed by the attacker',
      () => es,
      () =>
        forgeJwt(claimSet(), 'ES256', attackerEc.privateKey, {
          jku: `${listener.url}/jwks.json`,
          x5u: `${listener.url}/x`,
        }),
    ],
    [
      'embedded jwk (attacker RSA public key), RS256 signed by the attacker',
      () => rs,
      () => forgeJwt(claimSet(), 'RS256', attackerRsa.privateKey, { jwk: attackerJwk(attackerRsa.publicKey) }),
    ],
    [
      'embedded jwk (attacker EC public key) on the ES256 app',
      () => es,
      () => forgeJwt(claimSet(), 'ES256', attackerEc.privateKey, { jwk: attackerJwk(attackerEc.publicKey) }),
    ],
    [
      'embedded jwk as an oct key holding the HMAC secret',
      () => hs,
      () => forgeJwt(claimSet(), 'HS256', 'k', { jwk: { kty: 'oct', k: b64url('k') } }),
    ],
    [
      'x5c with the attacker key, RS256 signed by the attacker',
      () => rs,
      () =>
        forgeJwt(claimSet(), 'RS256', attackerRsa.privateKey, {
          x5c: [spkiDer(attackerRsa.publicKey).toString('base64')],
        }),
    ],
    [
      'kid ../../../dev/null, HS256 keyed with the empty file',
      () => hs,
      () => forgeJwt(claimSet(), 'HS256', Buffer.alloc(0), { kid: '../../../dev/null' }),
    ],
    [
      'kid /dev/null on the RS256 app, HS256 keyed with ""',
      () => rs,
      () => forgeJwt(claimSet(), 'HS256', Buffer.alloc(0), { kid: '/dev/null' }),
    ],
    [
      "kid ' OR '1'='1",
      () => hs,
      () => forgeJwt(claimSet(), 'HS256', 'attacker-secret-attacker-secret-0123', { kid: "' OR '1'='1" }),
    ],
    [
      'kid *)(uid=*',
      () => hs,
      () => forgeJwt(claimSet(), 'HS256', 'attacker-secret-attacker-secret-0123', { kid: '*)(uid=*' }),
    ],
    [
      'kid with NUL bytes',
      () => hs,
      () => forgeJwt(claimSet(), 'HS256', 'attacker-secret-attacker-secret-0123', { kid: 'a\u0000b' }),
    ],
    [
      'kid an object',
      () => hs,
      () => forgeJwt(claimSet(), 'HS256', 'attacker-secret-attacker-secret-0123', { kid: { $ne: null } }),
    ],
    ['kid of 100 KB', () => hs, () => forgeJwt(claimSet(), 'HS256', SECRET, { kid: 'k'.repeat(100_000) })],
  ];
  for (const [name, app, tok] of cases) {
    it(`${name} → 401, and no connection is made`, async () => {
      const before = listener.connections();
      expect401(await decide(app(), tok()));
      expect(listener.connections()).toBe(before);
    });
  }
  it('a token signed by the REAL key with jku/x5u/jwk headers is verified by the configured key only: no connection', async () => {
    const headers = {
      jku: `${listener.url}/jwks.json`,
      x5u: `${listener.url}/c`,
      kid: 'k1',
      jwk: attackerJwk(attackerRsa.publicKey),
    };
    const res = await decide(rs, forgeJwt(claimSet(), 'RS256', keys.rsa.privateKey, headers));
    expect(res.statusCode).toBe(200); // the header is ignored, not used: the configured key decided
    expect(listener.connections()).toBe(0);
  });
  it('zero connections to the listener over the whole block', () => {
    expect(listener.connections()).toBe(0);
  });
});

describe('crit', () => {
  const crit: [string, Record<string, unknown>][] = [
    ['crit ["exp2"] with exp2 present', { crit: ['exp2'], exp2: nowSec() + 10 }],
    ['crit ["exp2"] without exp2', { crit: ['exp2'] }],
    ['crit []', { crit: [] }],
    ['crit ["alg"]', { crit: ['alg'] }],
    ['crit ["b64"] with b64 false', { crit: ['b64'], b64: false }],
    ['crit with a duplicate', { crit: ['exp2', 'exp2'], exp2: 1 }],
    ['crit a string', { crit: 'exp2', exp2: 1 }],
    ['crit null', { crit: null }],
    ['crit [1]', { crit: [1] }],
  ];
  for (const [name, header] of crit) {
    it(`${name}, otherwise valid → 401 (HS256 and RS256 apps)`, async () => {
      expect401(await decide(hs, forgeJwt(claimSet(), 'HS256', SECRET, header)));
      expect401(await decide(rs, forgeJwt(claimSet(), 'RS256', keys.rsa.privateKey, header)));
    });
  }
});

describe('malformed compact forms', () => {
  const valid = () => forgeJwt(claimSet(), 'HS256', SECRET);
  const headerText = JSON.stringify({ alg: 'HS256', typ: 'JWT' });
  const macd = (h: string, p: string) => `${h}.${p}.${b64url(jwsSignature('HS256', `${h}.${p}`, SECRET))}`;
  const cases: [string, () => string][] = [
    ['one segment', () => valid().split('.')[0]!],
    ['two segments', () => valid().split('.').slice(0, 2).join('.')],
    ['four segments', () => `${valid()}.AAAA`],
    [
      'five segments (JWE shape)',
      () => {
        const [h, p, s] = valid().split('.');
        return `${h}.AAAA.${p}.BBBB.${s}`;
      },
    ],
    [
      'empty header segment',
      () => {
        const [, p, s] = valid().split('.');
        return `.${p}.${s}`;
      },
    ],
    [
      'empty payload segment',
      () => {
        const [h, , s] = valid().split('.');
        return `${h}..${s}`;
      },
    ],
    [
      'a space inside the payload',
      () => {
        const [h, p, s] = valid().split('.');
        return `${h}.${p!.slice(0, 5)} ${p!.slice(5)}.${s}`;
      },
    ],
    [
      'a tab inside the header',
      () => {
        const [h, p, s] = valid().split('.');
        return `${h!.slice(0, 5)}\t${h!.slice(5)}.${p}.${s}`;
      },
    ],
    [
      '= padding on the header segment, MAC over the padded text',
      () => {
        const h = `${Buffer.from(headerText).toString('base64url')}==`;
        return macd(h, b64url(JSON.stringify(claimSet())));
      },
    ],
    ['= padding on the signature', () => `${valid()}=`],
    [
      'standard base64 (+ and /) in the payload, MAC over it',
      () => {
        // a payload whose base64 needs + or /: a claim with bytes that encode to them
        const p = Buffer.from(JSON.stringify(claimSet({ note: '\u00ff\u00fe\u00fb>>>???' })))
          .toString('base64')
          .replace(/=+$/, '');
        expect(p).toMatch(/[+/]/);
        return macd(b64url(headerText), p);
      },
    ],
    ['a header that is not JSON, MAC valid', () => macd(b64url('{alg:HS256}'), b64url(JSON.stringify(claimSet())))],
    ['a header that is a JSON array, MAC valid', () => macd(b64url('["HS256"]'), b64url(JSON.stringify(claimSet())))],
    ['a header that is null, MAC valid', () => macd(b64url('null'), b64url(JSON.stringify(claimSet())))],
    [
      'a payload with a UTF-8 BOM, MAC valid',
      () =>
        macd(
          b64url(headerText),
          b64url(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(claimSet()))])),
        ),
    ],
    [
      'a payload with trailing data, MAC valid',
      () => macd(b64url(headerText), b64url(`${JSON.stringify(claimSet())} x`)),
    ],
    ['a payload that is an array, MAC valid', () => macd(b64url(headerText), b64url(JSON.stringify([claimSet()])))],
    ['a 1 MB token', () => forgeJwt(claimSet({ pad: 'p'.repeat(1_000_000) }), 'HS256', SECRET)],
    [
      'a token over 8 KiB in valid base64url',
      () => {
        const [h, , s] = valid().split('.');
        return `${h}.${'A'.repeat(8200)}.${s}`;
      },
    ],
  ];
  for (const [name, tok] of cases) {
    it(`${name} → 401`, async () => {
      expect401(await decide(hs, tok()));
    });
  }
});

describe('payload JSON that is not strict JSON, validly signed', () => {
  const header = JSON.stringify({ alg: 'HS256', typ: 'JWT' });
  const exp = () => nowSec() + 3600;
  const cases: [string, () => string | Buffer][] = [
    ['duplicate sub {"sub":"a","sub":"b"}', () => `{"sub":"agent-a","sub":"agent-b","team":"support","exp":${exp()}}`],
    [
      'duplicate roles, the last one privileged',
      () => `{"sub":"agent-1","roles":[],"roles":["approver","admin"],"exp":${exp()}}`,
    ],
    ['duplicate team', () => `{"sub":"agent-1","team":"sales","team":"support","exp":${exp()}}`],
    ['duplicate exp, the last one far in the future', () => `{"sub":"agent-1","exp":1,"exp":${exp()}}`],
    ['escaped twin keys (sub and s\\u0075b)', () => `{"sub":"agent-a","s\\u0075b":"agent-b","exp":${exp()}}`],
    ['a lone surrogate in sub', () => `{"sub":"agent-\\ud800","exp":${exp()}}`],
    [
      'invalid UTF-8 in sub',
      () => Buffer.concat([Buffer.from('{"sub":"agent-'), Buffer.from([0xff]), Buffer.from(`","exp":${exp()}}`)]),
    ],
  ];
  for (const [name, payload] of cases) {
    it(`${name} → 401`, async () => {
      expect401(await decide(hs, signRawJwt(header, payload(), 'HS256', SECRET)));
    });
  }
  it('a duplicate name in the HEADER ({"alg":"none","alg":"HS256"}) → 401', async () => {
    const h = '{"alg":"none","typ":"JWT","alg":"HS256"}';
    expect401(await decide(hs, signRawJwt(h, JSON.stringify(claimSet()), 'HS256', SECRET)));
  });
  it('control: the same payload text without duplicates is accepted', async () => {
    expect(
      (await decide(hs, signRawJwt(header, `{"sub":"agent-b","team":"support","exp":${exp()}}`, 'HS256', SECRET)))
        .statusCode,
    ).toBe(200);
  });
});

describe('token placement', () => {
  const tok = () => forgeJwt(claimSet({ roles: ['approver', 'admin'] }), 'HS256', SECRET);
  const placements: [string, () => { url: string; headers: Record<string, string> }][] = [
    ['query access_token on GET /policies', () => ({ url: `/policies?access_token=${tok()}`, headers: {} })],
    [
      'query authorization=Bearer… on GET /approvals',
      () => ({ url: `/approvals?authorization=Bearer%20${tok()}`, headers: {} }),
    ],
    [
      'cookie on GET /policies',
      () => ({ url: '/policies', headers: { cookie: `access_token=${tok()}; token=${tok()}` } }),
    ],
    ['X-Access-Token header', () => ({ url: '/policies', headers: { 'x-access-token': tok() } })],
    [
      'X-Forwarded-Authorization header',
      () => ({ url: '/policies', headers: { 'x-forwarded-authorization': `Bearer ${tok()}` } }),
    ],
    ['Proxy-Authorization header', () => ({ url: '/policies', headers: { 'proxy-authorization': `Bearer ${tok()}` } })],
    [
      'Authorization: bearer (lowercase scheme)',
      () => ({ url: '/policies', headers: { authorization: `bearer ${tok()}` } }),
    ],
    ['Authorization: BEARER', () => ({ url: '/policies', headers: { authorization: `BEARER ${tok()}` } })],
    [
      'Authorization: Bearer with a trailing space',
      () => ({ url: '/policies', headers: { authorization: `Bearer ${tok()} ` } }),
    ],
    ['Authorization: Bearer with a tab', () => ({ url: '/policies', headers: { authorization: `Bearer\t${tok()}` } })],
    ['Authorization: token in quotes', () => ({ url: '/policies', headers: { authorization: `Bearer "${tok()}"` } })],
    [
      'Authorization: two tokens, comma-separated',
      () => ({ url: '/policies', headers: { authorization: `Bearer ${tok()}, Bearer ${tok()}` } }),
    ],
  ];
  for (const [name, req] of placements) {
    it(`${name} → 401`, async () => {
      const { url, headers } = req();
      expect401(await hs.app.inject({ method: 'GET', url, headers }));
    });
  }
  it('control: the Authorization header with the same token is accepted on GET /policies', async () => {
    expect((await hs.app.inject({ method: 'GET', url: '/policies', headers: bearer(tok()) })).statusCode).toBe(200);
  });

  describe('over a real socket', () => {
    let port: number;
    let wire: TestApp;
    beforeAll(async () => {
      wire = await createTestApp({ env: 'prod' });
      port = await listenLoopback(wire.app);
    });
    afterAll(async () => wire?.close());
    const get = (headerLines: string[]) =>
      rawHttp(port, [
        `GET /policies HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headerLines.map((l) => `${l}\r\n`).join('')}\r\n`,
      ]);

    it('control: one Authorization header is accepted', async () => {
      const r = await get([`Authorization: Bearer ${tok()}`]);
      expect(r.responses[0]?.statusCode).toBe(200);
    });
    it('two Authorization headers (valid + forged, in either order) → 401: the header is ambiguous', async () => {
      const forged = forgeJwt(claimSet({ roles: ['admin'] }), 'HS256', 'attacker-secret-attacker-secret-0123');
      for (const lines of [
        [`Authorization: Bearer ${tok()}`, `Authorization: Bearer ${forged}`],
        [`Authorization: Bearer ${forged}`, `Authorization: Bearer ${tok()}`],
        [`Authorization: Bearer ${tok()}`, `Authorization: Bearer ${tok()}`],
      ]) {
        const r = await get(lines);
        expect(r.responses).toHaveLength(1);
        expect401(r.responses[0]!);
      }
    });
    it('a token in the query string and a cookie over the wire → 401', async () => {
      const r = await rawHttp(port, [
        `GET /policies?access_token=${tok()} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: token=${tok()}\r\n\r\n`,
      ]);
      expect401(r.responses[0]!);
    });
  });
});

describe('never 500: a burst of hostile tokens on every authenticated route', () => {
  it('every response is 401 problem+json', async () => {
    const hostile = [
      'Bearer',
      'Bearer .',
      'Bearer ..',
      'Bearer a.b.c',
      `Bearer ${'a'.repeat(9000)}.b.c`,
      `Bearer ${b64url('{"alg":"HS256"}')}.${b64url('{"sub":"x","exp":1e999}')}.`,
      `Bearer ${b64url('{"alg":"HS256","__proto__":{"alg":"none"}}')}.${b64url(JSON.stringify(claimSet()))}.AAAA`,
      `Bearer ${b64url('{"alg":"HS256","constructor":{"prototype":{"polluted":1}}}')}.${b64url('{"__proto__":{"isAdmin":true},"sub":"x","exp":9999999999}')}.AAAA`,
      `Bearer ${b64url(JSON.stringify({ alg: 'HS256' }))}.${b64url(JSON.stringify({ ...claimSet(), sub: { toString: 'x' } }))}.AAAA`,
    ];
    const routes: [string, string, unknown?][] = [
      ['POST', '/decide', LOOKUP],
      ['POST', '/explain', LOOKUP],
      ['GET', '/policies'],
      ['GET', '/tools'],
      ['GET', '/decisions'],
      ['GET', '/approvals'],
      ['POST', '/approvals', LOOKUP],
      ['POST', '/admin/reload'],
      ['GET', '/admin/webhooks'],
      ['GET', '/budgets'],
      ['POST', '/usage', { tool: 'llm', usd: 1 }],
      ['POST', '/approvals/x/grant', {}],
    ];
    for (const authorization of hostile) {
      for (const [method, url, body] of routes) {
        const res = await hs.app.inject({
          method: method as 'GET' | 'POST',
          url,
          headers: { authorization, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
          ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
        });
        expect401(res);
      }
    }
  });
});

describe('the full-token path over a socket (no inject normalisation)', () => {
  it('a forged alg none token over the wire → 401; a real one → 200', async () => {
    const p = await listenLoopback(hs.app);
    const none = forgeJwt(claimSet({ roles: ['admin'] }), 'none', '');
    const bad = await rawHttp(p, rawPost(none, JSON.stringify(LOOKUP)));
    expect401(bad.responses[0]!);
    const good = await rawHttp(p, rawPost(forgeJwt(claimSet(), 'HS256', SECRET), JSON.stringify(LOOKUP)));
    expect(good.responses[0]?.statusCode).toBe(200);
  });
});
