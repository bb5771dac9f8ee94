// Authentication over HTTP (docs/spec.md section 5): every way a bearer token can be missing, malformed,
// forged, expired or carry the wrong claims answers 401 problem+json, never 500 and never a decision.
// Identity comes only from verified claims; the algorithm is pinned by the server's key.
import { createHmac } from 'node:crypto';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LIMITS } from '../../src/approvals/approval.js';
import { DEFAULT_JWT_MAX_LIFETIME_SEC } from '../../src/config.js';
import { createAuthenticator, registerAuth, type AuthOptions } from '../../src/http/auth.js';
import { ClaimError, identityFromClaims, MAX_CLAIM_LENGTH } from '../../src/policy/claims.js';
import { registerErrorHandling } from '../../src/http/errors.js';
import {
  SECRET,
  agentToken,
  bearer,
  createTestApp,
  keyPairs,
  post,
  signJwt,
  token,
  type TestApp,
} from '../helpers/app.js';

const now = (): number => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  sub: 'agent-1',
  team: 'support',
  agent: 'bot',
  roles: [],
  iat: now(),
  exp: now() + 3600,
  ...extra,
});
const LOOKUP = { tool: 'lookup_order', args: { order: 'A1' } };

function expect401(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(401);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status: 401, type: 'urn:gatehouse:problem:unauthorized' });
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  expect(body).not.toHaveProperty('decision');
}

const b64 = (o: unknown): string => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
const hs = (input: string, key: string | Buffer, bits = 256): string =>
  createHmac(`sha${bits}`, key).update(input).digest('base64url');

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod' });
});
afterAll(async () => t.close());

const decideWith = (headers: Record<string, string>, url = '/decide') =>
  t.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(LOOKUP),
  });

describe('HS256 app: malformed and forged tokens are 401', () => {
  it('control: a valid token decides', async () => {
    const res = await post(t.app, '/decide', LOOKUP, agentToken());
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ decision: 'allow' });
  });

  const valid = (): string => token();
  const cases: [string, () => Record<string, string>][] = [
    ['no Authorization header', () => ({})],
    ['scheme Basic', () => ({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` })],
    ['scheme Basic carrying a valid JWT', () => ({ authorization: `Basic ${valid()}` })],
    ['lowercase bearer', () => ({ authorization: `bearer ${valid()}` })],
    ['Bearer without a token', () => ({ authorization: 'Bearer ' })],
    ['Bearer with two spaces', () => ({ authorization: `Bearer  ${valid()}` })],
    ['garbage', () => ({ authorization: 'Bearer not-a-jwt-at-all' })],
    ['garbage with dots', () => ({ authorization: 'Bearer ...' })],
    ['two segments', () => ({ authorization: `Bearer ${valid().split('.').slice(0, 2).join('.')}` })],
    ['four segments', () => ({ authorization: `Bearer ${valid()}.${b64('x')}` })],
    ['five segments (JWE shape)', () => ({ authorization: `Bearer ${valid()}.${b64('x')}.${b64('y')}` })],
    ['base64 padding', () => ({ authorization: `Bearer ${valid()}==` })],
    [
      'header is not JSON',
      () => {
        const [, p] = valid().split('.');
        const input = `${b64('not json')}.${p}`;
        return { authorization: `Bearer ${input}.${hs(input, SECRET)}` };
      },
    ],
    [
      'payload is not JSON',
      () => {
        const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64('{"sub":')}`;
        return { authorization: `Bearer ${input}.${hs(input, SECRET)}` };
      },
    ],
    [
      'payload is a JSON string, not an object',
      () => {
        const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64('"agent-1"')}`;
        return { authorization: `Bearer ${input}.${hs(input, SECRET)}` };
      },
    ],
    [
      'bad signature (another secret)',
      () => ({ authorization: `Bearer ${signJwt(claims(), { key: 'another-secret-0123456789abcdef0123' })}` }),
    ],
    [
      'bad signature (payload swapped after signing)',
      () => {
        const [h, , s] = valid().split('.');
        return { authorization: `Bearer ${h}.${b64(claims({ roles: ['admin', 'approver'] }))}.${s}` };
      },
    ],
    [
      'signature stripped',
      () => {
        const [h, p] = valid().split('.');
        return { authorization: `Bearer ${h}.${p}.` };
      },
    ],
    ['alg none', () => ({ authorization: `Bearer ${signJwt(claims(), { alg: 'none' })}` })],
    ['alg None', () => ({ authorization: `Bearer ${b64({ alg: 'None', typ: 'JWT' })}.${b64(claims())}.` })],
    [
      'alg NONE with an HMAC signature',
      () => {
        const input = `${b64({ alg: 'NONE', typ: 'JWT' })}.${b64(claims())}`;
        return { authorization: `Bearer ${input}.${hs(input, SECRET)}` };
      },
    ],
    [
      'validly signed HS384 (non-pinned alg)',
      () => ({ authorization: `Bearer ${signJwt(claims(), { alg: 'HS384' })}` }),
    ],
    [
      'validly signed HS512 (non-pinned alg)',
      () => ({ authorization: `Bearer ${signJwt(claims(), { alg: 'HS512' })}` }),
    ],
    [
      'header says HS256 but the MAC is HS512',
      () => {
        const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims())}`;
        return { authorization: `Bearer ${input}.${hs(input, SECRET, 512)}` };
      },
    ],
    ['a token longer than 8 KiB', () => ({ authorization: `Bearer ${signJwt(claims({ pad: 'x'.repeat(9000) }))}` })],
    [
      'crit header naming an unknown extension',
      () => ({ authorization: `Bearer ${signJwt(claims(), { header: { crit: ['exp2'], exp2: 1 } })}` }),
    ],
  ];
  for (const [name, headers] of cases) {
    it(name, async () => {
      expect401(await decideWith(headers()));
    });
  }
});

describe('time claims, with a 30 s clock tolerance', () => {
  it('expired beyond the tolerance is 401', async () => {
    expect401(await post(t.app, '/decide', LOOKUP, signJwt(claims({ exp: now() - 60 }))));
  });
  it('expired within the tolerance is accepted', async () => {
    const res = await post(t.app, '/decide', LOOKUP, signJwt(claims({ exp: now() - 10 })));
    expect(res.statusCode).toBe(200);
  });
  it('nbf in the future beyond the tolerance is 401', async () => {
    expect401(await post(t.app, '/decide', LOOKUP, signJwt(claims({ nbf: now() + 120 }))));
  });
  it('nbf in the future within the tolerance is accepted', async () => {
    expect((await post(t.app, '/decide', LOOKUP, signJwt(claims({ nbf: now() + 10 })))).statusCode).toBe(200);
  });
  it('exp missing is 401', async () => {
    const c = claims();
    delete c.exp;
    expect401(await post(t.app, '/decide', LOOKUP, signJwt(c)));
  });
  it('exp as a string is 401', async () => {
    expect401(await post(t.app, '/decide', LOOKUP, signJwt(claims({ exp: String(now() + 3600) }))));
  });
});

describe('iat and the typ header', () => {
  const TYP = "the token header's `typ` must be JWT or at+jwt";
  const IAT = "the token's `iat` must be a NumericDate not in the future";
  it('iat within the clock tolerance, in the past, or absent is accepted', async () => {
    for (const iat of [now(), now() - 86_400, now() + 10, 0, undefined]) {
      expect((await post(t.app, '/decide', LOOKUP, signJwt(claims({ iat })))).statusCode, `iat ${String(iat)}`).toBe(
        200,
      );
    }
  });
  for (const [name, iat] of [
    ['an hour in the future', () => now() + 3600],
    ['two minutes in the future (beyond the 30 s tolerance)', () => now() + 120],
    ['in milliseconds', () => Date.now()],
    ['a numeric string', () => String(now())],
    ['negative', () => -1],
    ['null', () => null],
    ['an array', () => [now()]],
    ['an object', () => ({ t: now() })],
  ] as const) {
    it(`iat ${name} is 401`, async () => {
      const res = await post(t.app, '/decide', LOOKUP, signJwt(claims({ iat: iat() })));
      expect401(res);
      expect((res.json() as { detail: string }).detail).toBe(IAT);
    });
  }
  it('typ JWT or at+jwt in any case, with or without application/, or no typ, is accepted', async () => {
    for (const typ of [
      'JWT',
      'jwt',
      'Jwt',
      'at+jwt',
      'AT+JWT',
      'application/jwt',
      'application/at+jwt',
      'APPLICATION/AT+JWT',
      undefined,
    ]) {
      const res = await post(t.app, '/decide', LOOKUP, signJwt(claims(), { header: { typ } }));
      expect(res.statusCode, `typ ${String(typ)}: ${res.body}`).toBe(200);
    }
  });
  for (const typ of [
    'JOSE',
    'JOSE+JSON',
    'logout+jwt',
    'secevent+jwt',
    'dpop+jwt',
    'application/json',
    'text/jwt',
    '',
    ' JWT',
    'JWT ',
    'at+jwt+jwt',
    'application/application/jwt',
    'JWT\u0000',
    'jwt\u212a',
    1,
    null,
    ['JWT'],
    {},
  ] as const) {
    it(`typ ${JSON.stringify(typ)} is 401`, async () => {
      const res = await post(t.app, '/decide', LOOKUP, signJwt(claims(), { header: { typ } }));
      expect401(res);
      expect((res.json() as { detail: string }).detail).toBe(TYP);
    });
  }
  it('the checks hold for a token already seen: a refused token is never cached', async () => {
    const tok = signJwt(claims({ iat: now() + 3600 }));
    expect401(await post(t.app, '/decide', LOOKUP, tok));
    expect401(await post(t.app, '/decide', LOOKUP, tok));
  });
});

describe('identity claims', () => {
  it('sub missing is 401', async () => {
    const c = claims();
    delete c.sub;
    expect401(await post(t.app, '/decide', LOOKUP, signJwt(c)));
  });
  for (const [name, sub] of [
    ['a number', 42],
    ['an array', ['agent-1']],
    ['an object', { id: 'a' }],
    ['empty', ''],
    ['null', null],
    ['over 256 characters', 'a'.repeat(257)],
  ] as const) {
    it(`sub ${name} is 401`, async () => {
      expect401(await post(t.app, '/decide', LOOKUP, signJwt(claims({ sub }))));
    });
  }
  for (const [name, team] of [
    ['a number', 123],
    ['an array', ['support', 'sales']],
    ['an object', { id: 'support' }],
    ['empty', ''],
    ['null', null],
    ['true', true],
  ] as const) {
    it(`team ${name} is 401`, async () => {
      expect401(await post(t.app, '/decide', LOOKUP, signJwt(claims({ team }))));
    });
  }
  for (const [name, agent] of [
    ['a number', 7],
    ['an array', ['bot']],
  ] as const) {
    it(`agent ${name} is 401`, async () => {
      expect401(await post(t.app, '/decide', LOOKUP, signJwt(claims({ agent }))));
    });
  }
  for (const [name, roles] of [
    ['a string', 'approver'],
    ['an object', { approver: true }],
    ['an array with a number', ['approver', 1]],
    ['a number', 1],
  ] as const) {
    it(`roles ${name} is 401`, async () => {
      expect401(await post(t.app, '/decide', LOOKUP, signJwt(claims({ roles }))));
    });
  }

  it('team missing: a caller with no team, so rules naming teams do not match it', async () => {
    const refund = { tool: 'refund', args: { order: 'A1', amount: 40 } };
    const withTeam = await post(t.app, '/decide', refund, token({ team: 'support' }));
    expect(withTeam.statusCode).toBe(200);
    expect(withTeam.json()).toMatchObject({ decision: 'allow', rule: 'refund-support' });
    const noTeam = await post(t.app, '/decide', refund, token({ team: undefined }));
    expect(noTeam.statusCode).toBe(403);
    expect(noTeam.json()).toMatchObject({ decision: 'deny', rule: 'payments#default' });
  });

  it('roles missing: a caller with no roles (admin route is 403, not 401)', async () => {
    const c = claims();
    delete c.roles;
    const res = await t.app.inject({ method: 'POST', url: '/admin/reload', headers: bearer(signJwt(c)) });
    expect(res.statusCode).toBe(403);
  });
});

describe('identity claims with control characters or lone surrogates', () => {
  // A distinctive value, to check no answer echoes it.
  const bad = (ch: string): string => `agentVALUE${ch}x`;
  const cases: [string, string, Record<string, unknown>][] = [
    ['sub with U+0000', 'sub', { sub: bad('\u0000') }],
    ['sub with a newline', 'sub', { sub: bad('\n') }],
    ['sub with DEL', 'sub', { sub: bad('\u007f') }],
    ['sub with a C1 control (U+0085)', 'sub', { sub: bad('\u0085') }],
    ['team with U+0000', 'team', { team: bad('\u0000') }],
    ['agent with a tab', 'agent', { agent: bad('\t') }],
    ['a role with U+0000', 'roles', { roles: ['approver', bad('\u0000')] }],
  ];
  for (const [name, claim, extra] of cases) {
    it(`${name} is 401, naming the claim and never its value`, async () => {
      const res = await post(t.app, '/decide', LOOKUP, signJwt(claims(extra)));
      expect401(res);
      expect((res.json() as { detail: string }).detail).toBe(`the claim "${claim}" contains a control character`);
      expect(res.body).not.toContain('VALUE');
    });
  }

  it('a lone surrogate in any identity claim is refused (identityFromClaims)', () => {
    const names = { team: 'team', agent: 'agent', roles: 'roles' };
    for (const [claim, extra] of [
      ['sub', { sub: 'a\ud800' }],
      ['team', { team: '\udc00b' }],
      ['agent', { agent: 'x\ud83d' }],
      ['roles', { roles: ['\ud800'] }],
    ] as const) {
      expect(() => identityFromClaims(claims(extra), names), claim).toThrow(
        new ClaimError(`the claim "${claim}" contains a lone surrogate`),
      );
    }
    // A well-formed pair is an ordinary character.
    expect(identityFromClaims(claims({ sub: 'ann \ud83d\ude00' }), names).user).toBe('ann \ud83d\ude00');
  });

  it('the configured claim names are the ones checked', () => {
    const names = { team: 'grp', agent: 'azp', roles: 'scope' };
    expect(() => identityFromClaims(claims({ grp: 'a\u0000' }), names)).toThrow(
      'the claim "grp" contains a control character',
    );
    expect(() => identityFromClaims(claims({ scope: ['\u0001'] }), names)).toThrow(
      'the claim "scope" contains a control character',
    );
  });

  it('everything authentication accepts fits the approval store (sub, team, agent)', () => {
    expect(MAX_CLAIM_LENGTH).toBeLessThanOrEqual(LIMITS.name);
    const longest = 'x'.repeat(MAX_CLAIM_LENGTH);
    expect(
      identityFromClaims(claims({ sub: longest, team: longest, agent: longest }), {
        team: 'team',
        agent: 'agent',
        roles: 'roles',
      }),
    ).toMatchObject({
      user: longest,
      team: longest,
      agent: longest,
    });
  });
});

describe('identity claims with invisible format characters (bidi, isolates, zero-width)', () => {
  const FORMAT = 'the claim "%s" contains an invisible format or separator character';
  const names = { team: 'team', agent: 'agent', roles: 'roles' };
  // Each is Unicode general category Cf, except U+2028 / U+2029 (Zl / Zp).
  const characters: [string, string][] = [
    ['ZERO WIDTH SPACE U+200B', '\u200b'],
    ['ZERO WIDTH NON-JOINER U+200C', '\u200c'],
    ['ZERO WIDTH JOINER U+200D', '\u200d'],
    ['WORD JOINER U+2060', '\u2060'],
    ['BOM U+FEFF', '\ufeff'],
    ['SOFT HYPHEN U+00AD', '\u00ad'],
    ['LRM U+200E', '\u200e'],
    ['RLM U+200F', '\u200f'],
    ['ALM U+061C', '\u061c'],
    ['LRE U+202A', '\u202a'],
    ['RLE U+202B', '\u202b'],
    ['PDF U+202C', '\u202c'],
    ['LRO U+202D', '\u202d'],
    ['RLO U+202E', '\u202e'],
    ['LRI U+2066', '\u2066'],
    ['RLI U+2067', '\u2067'],
    ['FSI U+2068', '\u2068'],
    ['PDI U+2069', '\u2069'],
    ['TAG LATIN CAPITAL LETTER A U+E0041', '\u{e0041}'],
    ['LINE SEPARATOR U+2028', '\u2028'],
    ['PARAGRAPH SEPARATOR U+2029', '\u2029'],
  ];
  for (const [name, ch] of characters) {
    it(`${name} in sub, team, agent or a role is refused, naming the claim`, () => {
      for (const [claim, extra] of [
        ['sub', { sub: `alice${ch}` }],
        ['team', { team: `sup${ch}port` }],
        ['agent', { agent: `${ch}bot` }],
        ['roles', { roles: ['reader', `approver${ch}`] }],
      ] as const) {
        expect(() => identityFromClaims(claims(extra), names), `${name} in ${claim}`).toThrow(
          new ClaimError(FORMAT.replace('%s', claim)),
        );
      }
    });
  }

  it('over HTTP: `alice` authenticates; alice + U+200B and a right-to-left override are 401 without echoing the value', async () => {
    expect((await post(t.app, '/decide', LOOKUP, signJwt(claims({ sub: 'alice' })))).statusCode).toBe(200);
    for (const [claim, extra] of [
      ['sub', { sub: 'aliceVALUE\u200b' }],
      ['sub', { sub: 'VALUE\u202egnp.exe' }],
      ['team', { team: 'supportVALUE\u2066' }],
      ['agent', { agent: 'botVALUE\ufeff' }],
      ['roles', { roles: ['approverVALUE\u200d'] }],
    ] as const) {
      const res = await post(t.app, '/decide', LOOKUP, signJwt(claims(extra)));
      expect401(res);
      expect((res.json() as { detail: string }).detail).toBe(FORMAT.replace('%s', claim));
      expect(res.body).not.toContain('VALUE');
    }
  });

  it('visible non-ASCII names are still accepted (letters, marks, emoji, CJK, RTL letters)', () => {
    for (const sub of ['zoë', 'e\u0301', 'ann \ud83d\ude00', '李雷', 'مريم', 'a b', 'o\u2019brien']) {
      expect(identityFromClaims(claims({ sub }), names).user).toBe(sub);
    }
  });
});

describe('maximum token lifetime (JWT_MAX_LIFETIME)', () => {
  const TOO_LONG = "the token's lifetime is longer than this server accepts";
  function expectTooLong(res: LightMyRequestResponse): void {
    expect401(res);
    expect((res.json() as { detail: string }).detail).toBe(TOO_LONG);
  }

  it('the default is 24 h: the development tokens `serve` prints (expiresIn 24h) are accepted', async () => {
    expect(DEFAULT_JWT_MAX_LIFETIME_SEC).toBe(86_400);
    expect((await post(t.app, '/decide', LOOKUP, signJwt(claims({ exp: now() + 86_400 })))).statusCode).toBe(200);
  });

  for (const [name, exp] of [
    ['exp = 1e20', () => 1e20],
    ['exp in milliseconds', () => Date.now() + 1000],
    ['exp a day and ten minutes ahead', () => now() + 86_400 + 600],
  ] as const) {
    it(`${name} is 401, without echoing the value`, async () => {
      const value = exp();
      const res = await post(t.app, '/decide', LOOKUP, signJwt(claims({ exp: value })));
      expectTooLong(res);
      expect(res.body).not.toContain(String(value));
      // Refused before caching: the same token is refused again.
      expectTooLong(await post(t.app, '/decide', LOOKUP, signJwt(claims({ exp: value }))));
    });
  }

  describe('with a configured maximum', () => {
    let app: FastifyInstance;
    const options = (maxLifetimeSec: number): AuthOptions => ({
      key: SECRET,
      algorithm: 'HS256',
      issuer: null,
      audience: null,
      clockToleranceSec: 30,
      maxLifetimeSec,
      claims: { team: 'team', agent: 'agent', roles: 'roles' },
    });
    beforeAll(async () => {
      // Authentication alone: a route that answers the identity it authenticated.
      app = Fastify();
      const opts = options(600);
      await registerAuth(app, opts);
      registerErrorHandling(app);
      const authenticate = createAuthenticator(app, opts);
      app.get('/whoami', async (request) => authenticate(request));
      await app.ready();
    });
    afterAll(async () => app.close());
    const whoami = (tok: string) => app.inject({ method: 'GET', url: '/whoami', headers: bearer(tok) });

    it('refuses to build an authenticator without a usable maximum (NaN would turn the check off)', () => {
      for (const bad of [Number.NaN, 0, -1, 1.5])
        expect(() => createAuthenticator(app, options(bad))).toThrow(RangeError);
    });

    it('accepts a token within it (plus the clock tolerance) and refuses one beyond it', async () => {
      expect((await whoami(signJwt(claims({ exp: now() + 300 })))).json()).toMatchObject({ user: 'agent-1' });
      expect((await whoami(signJwt(claims({ exp: now() + 600 })))).statusCode).toBe(200);
      expectTooLong(await whoami(signJwt(claims({ exp: now() + 3600 }))));
    });

    it('a cached identity never outlives its exp', async () => {
      const start = now();
      const tok = signJwt(claims({ sub: 'cached-2', iat: start, exp: start + 600 }));
      try {
        expect((await whoami(tok)).statusCode).toBe(200);
        vi.useFakeTimers({ toFake: ['Date'] });
        vi.setSystemTime((start + 599) * 1000);
        expect((await whoami(tok)).statusCode).toBe(200); // from the cache
        vi.setSystemTime((start + 600 + 31) * 1000);
        expect401(await whoami(tok));
      } finally {
        vi.useRealTimers();
      }
    });
  });
});

describe('token placement: only the Authorization header counts', () => {
  it('a token in the query string is ignored', async () => {
    const tok = token();
    for (const name of ['token', 'access_token', 'jwt']) {
      expect401(await decideWith({}, `/decide?${name}=${tok}`));
    }
  });
  it('a token in a cookie is ignored', async () => {
    const tok = token();
    expect401(await decideWith({ cookie: `token=${tok}; access_token=${tok}; authorization=Bearer%20${tok}` }));
  });
});

describe('issuer and audience, when configured', () => {
  let ia: TestApp;
  beforeAll(async () => {
    ia = await createTestApp({ issuer: 'https://idp.example.com', audience: 'gatehouse' });
  });
  afterAll(async () => ia.close());
  const ok = { iss: 'https://idp.example.com', aud: 'gatehouse' };

  it('the right iss and aud are accepted (aud as a string or an array holding ours)', async () => {
    expect((await post(ia.app, '/decide', LOOKUP, signJwt(claims(ok)))).statusCode).toBe(200);
    expect(
      (await post(ia.app, '/decide', LOOKUP, signJwt(claims({ ...ok, aud: ['other', 'gatehouse'] })))).statusCode,
    ).toBe(200);
  });
  const bad: [string, Record<string, unknown>][] = [
    ['another issuer', { ...ok, iss: 'https://evil.example.com' }],
    ['an issuer with a suffix', { ...ok, iss: 'https://idp.example.com.evil' }],
    ['an issuer with a prefix', { ...ok, iss: 'xhttps://idp.example.com' }],
    ['an issuer with a trailing slash', { ...ok, iss: 'https://idp.example.com/' }],
    ['an issuer in an array', { ...ok, iss: ['https://idp.example.com'] }],
    ['a numeric issuer', { ...ok, iss: 1 }],
    ['another audience', { ...ok, aud: 'billing' }],
    ['an audience array without ours', { ...ok, aud: ['billing', 'crm'] }],
    ['an empty audience', { ...ok, aud: '' }],
    ['iss missing', { aud: 'gatehouse' }],
    ['aud missing', { iss: 'https://idp.example.com' }],
  ];
  for (const [name, extra] of bad) {
    it(`${name} is 401`, async () => {
      expect401(await post(ia.app, '/decide', LOOKUP, signJwt(claims(extra))));
    });
  }
});

describe('asymmetric keys: each app accepts its own key and algorithm only', () => {
  const keys = keyPairs();
  const pem = (k: { export(o: { type: 'spki'; format: 'pem' }): string | Buffer }): string =>
    String(k.export({ type: 'spki', format: 'pem' }));
  const setups = [
    { name: 'RS256', alg: 'RS256', pair: keys.rsa, other: keys.ec, otherAlg: 'ES256' },
    { name: 'ES256', alg: 'ES256', pair: keys.ec, other: keys.ed, otherAlg: 'EdDSA' },
    { name: 'EdDSA', alg: 'EdDSA', pair: keys.ed, other: keys.rsa, otherAlg: 'RS256' },
  ] as const;

  for (const s of setups) {
    describe(s.name, () => {
      let a: TestApp;
      const publicPem = pem(s.pair.publicKey);
      beforeAll(async () => {
        a = await createTestApp({ key: publicPem, algorithm: s.alg });
      });
      afterAll(async () => a.close());

      it('accepts a token signed with its private key', async () => {
        const res = await post(a.app, '/decide', LOOKUP, signJwt(claims(), { alg: s.alg, key: s.pair.privateKey }));
        expect(res.statusCode).toBe(200);
        expect(res.json()).toMatchObject({ decision: 'allow' });
      });
      it('refuses a token signed by another key pair of another algorithm', async () => {
        expect401(
          await post(a.app, '/decide', LOOKUP, signJwt(claims(), { alg: s.otherAlg, key: s.other.privateKey })),
        );
      });
      it('refuses HS256 signed with the public key PEM as the HMAC secret (key confusion)', async () => {
        expect401(await post(a.app, '/decide', LOOKUP, signJwt(claims(), { alg: 'HS256', key: publicPem })));
        expect401(await post(a.app, '/decide', LOOKUP, signJwt(claims(), { alg: 'HS256', key: publicPem.trim() })));
        const der = s.pair.publicKey.export({ type: 'spki', format: 'der' });
        const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims())}`;
        expect401(await post(a.app, '/decide', LOOKUP, `${input}.${hs(input, der)}`));
      });
      it('refuses HS256 signed with the test secret, and alg none', async () => {
        expect401(await post(a.app, '/decide', LOOKUP, token()));
        expect401(await post(a.app, '/decide', LOOKUP, signJwt(claims(), { alg: 'none' })));
      });
    });
  }

  it('RS256 app refuses a validly signed RS512 token (non-pinned alg)', async () => {
    const a = await createTestApp({ key: pem(keys.rsa.publicKey), algorithm: 'RS256' });
    try {
      expect401(await post(a.app, '/decide', LOOKUP, signJwt(claims(), { alg: 'RS512', key: keys.rsa.privateKey })));
      expect(
        (await post(a.app, '/decide', LOOKUP, signJwt(claims(), { alg: 'RS256', key: keys.rsa.privateKey })))
          .statusCode,
      ).toBe(200);
    } finally {
      await a.close();
    }
  });
});

describe('every authenticated route refuses a request without a valid token', () => {
  const id = '018f3c1e-7a2b-7c3d-8e4f-0123456789ab';
  const routes: { method: 'GET' | 'POST'; url: string; body?: unknown }[] = [
    { method: 'POST', url: '/decide', body: LOOKUP },
    { method: 'POST', url: '/explain', body: LOOKUP },
    { method: 'GET', url: '/policies' },
    { method: 'GET', url: '/tools' },
    { method: 'GET', url: '/decisions' },
    { method: 'POST', url: '/admin/reload' },
    { method: 'GET', url: '/admin/webhooks' },
    { method: 'GET', url: '/budgets' },
    { method: 'POST', url: '/usage', body: { tool: 'llm', usd: 1 } },
    { method: 'POST', url: '/approvals', body: { tool: 'refund', args: { order: 'A1', amount: 120 } } },
    { method: 'GET', url: '/approvals' },
    { method: 'GET', url: `/approvals/${id}` },
    { method: 'GET', url: `/approvals/${id}?wait=5` },
    { method: 'POST', url: `/approvals/${id}/grant`, body: { note: 'ok' } },
    { method: 'POST', url: `/approvals/${id}/deny`, body: { reason: 'no' } },
  ];
  const badHeaders: [string, () => Record<string, string>][] = [
    ['no token', () => ({})],
    ['garbage', () => ({ authorization: 'Bearer garbage' })],
    ['alg none', () => bearer(signJwt(claims({ roles: ['admin', 'approver'] }), { alg: 'none' }))],
    ['expired', () => bearer(signJwt(claims({ exp: now() - 3600, roles: ['admin', 'approver'] })))],
    [
      'bad signature',
      () =>
        bearer(signJwt(claims({ roles: ['admin', 'approver'] }), { key: 'wrong-secret-wrong-secret-wrong-secret' })),
    ],
    ['HS512', () => bearer(signJwt(claims({ roles: ['admin', 'approver'] }), { alg: 'HS512' }))],
  ];
  for (const r of routes) {
    for (const [name, headers] of badHeaders) {
      it(`${r.method} ${r.url}: ${name} → 401`, async () => {
        const res = await t.app.inject({
          method: r.method,
          url: r.url,
          headers: { ...headers(), ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}) },
          ...(r.body !== undefined ? { payload: JSON.stringify(r.body) } : {}),
        });
        expect401(res);
      });
    }
  }
  it('authentication runs before the body is read: a broken body without a token is still 401', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/decide',
      headers: { 'content-type': 'text/plain' },
      payload: '{{{',
    });
    expect401(res);
  });
});

describe('the verified-token cache', () => {
  it('still refuses a cached token once it has expired (exp plus the tolerance)', async () => {
    const t = await createTestApp();
    try {
      const now = Math.floor(Date.now() / 1000);
      const tok = signJwt({ sub: 'cached-1', team: 'support', iat: now, exp: now + 60 });
      const body = { tool: 'lookup_order', args: { order: 'A1' } };
      expect((await post(t.app, '/decide', body, tok)).statusCode).toBe(200);
      expect((await post(t.app, '/decide', body, tok)).statusCode).toBe(200); // from the cache
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime((now + 60 + 31) * 1000);
      const late = await post(t.app, '/decide', body, tok);
      expect(late.statusCode).toBe(401);
      expect(late.headers['content-type']).toContain('application/problem+json');
    } finally {
      vi.useRealTimers();
      await t.close();
    }
  });

  it('gives each token its own identity (the whole token is the key)', async () => {
    const t = await createTestApp();
    try {
      const a = token({ sub: 'ann', team: 'support' });
      const b = token({ sub: 'bob', team: 'sales' });
      const body = { tool: 'refund', args: { order: 'A1', amount: 5 } };
      for (let i = 0; i < 3; i++) {
        expect((await post(t.app, '/decide', body, a)).json()).toMatchObject({ decision: 'allow' });
        expect((await post(t.app, '/decide', body, b)).json()).toMatchObject({ decision: 'deny' });
      }
    } finally {
      await t.close();
    }
  });
});
