// The byte-level boundary of POST /decide (docs/spec.md section 4 and 5): media type, size, strict JSON,
// then a schema that never coerces, defaults or strips. Every refusal is a 4xx problem+json that
// names the problem and where, and never echoes a value from the body.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { agentToken, approverToken, bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { listenLoopback, rawHttp, rawPost, type RawResponse } from '../helpers/http.js';

/** A distinctive value: it must never come back in an error body. */
const CANARY = 'CANARY-5e1f-do-not-echo';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod' });
});
afterAll(async () => t.close());
afterEach(() => {
  // Nothing a body said may ever reach Object.prototype.
  const probe = {} as Record<string, unknown>;
  expect(probe.polluted).toBeUndefined();
  expect(probe.isAdmin).toBeUndefined();
  expect(Object.keys(Object.prototype)).toEqual([]);
});

function raw(
  payload: string | Buffer,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  app = t.app,
) {
  return app.inject({ method: 'POST', url: '/decide', headers: { ...bearer(agentToken()), ...headers }, payload });
}

interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: { pointer: string; message: string }[];
}

/** A problem+json of this status, never a decision, never quoting the canary. */
function expectProblem(res: LightMyRequestResponse, status: number, code?: string): ProblemBody {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as ProblemBody;
  expect(body.status).toBe(status);
  expect(typeof body.type).toBe('string');
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  if (code !== undefined) expect(body.code).toBe(code);
  expect(body).not.toHaveProperty('decision');
  expect(res.body).not.toContain(CANARY);
  return body;
}

const lookup = (args: string): string => `{"tool":"lookup_order","args":${args}}`;

describe('strict JSON: 400 bad_json naming the problem and where', () => {
  const cases: [string, string | Buffer, string][] = [
    [
      'duplicate key at the top level',
      `{"tool":"lookup_order","tool":"wipe_orders","args":{"x":"${CANARY}"}}`,
      'duplicate_key',
    ],
    ['duplicate key nested in args', lookup(`{"order":"${CANARY}","order":"${CANARY}"}`), 'duplicate_key'],
    ['duplicate key deep in args', lookup(`{"a":{"b":[{"c":"${CANARY}","c":1}]}}`), 'duplicate_key'],
    [
      'duplicate key written with an escape (t\\u006fol)',
      `{"tool":"lookup_order","t\\u006fol":"wipe_orders","args":{"x":"${CANARY}"}}`,
      'duplicate_key',
    ],
    ['lone high surrogate in a value', lookup(`{"note":"${CANARY}\\ud800"}`), 'lone_surrogate'],
    ['lone low surrogate in a value', lookup(`{"note":"\\udead${CANARY}"}`), 'lone_surrogate'],
    ['reversed surrogate pair', lookup(`{"note":"${CANARY}\\udc00\\ud800"}`), 'lone_surrogate'],
    ['lone surrogate in a key', lookup(`{"\\ud800":"${CANARY}"}`), 'lone_surrogate'],
    ['lone surrogate in the tool name', `{"tool":"lookup_\\ud800","args":{"x":"${CANARY}"}}`, 'lone_surrogate'],
    [
      'a BOM before the JSON',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lookup(`{"x":"${CANARY}"}`))]),
      'syntax',
    ],
    ['trailing data', `${lookup(`{"x":"${CANARY}"}`)} {"tool":"wipe_orders"}`, 'trailing_data'],
    ['trailing garbage', `${lookup(`{"x":"${CANARY}"}`)}x`, 'trailing_data'],
    ['two values', `${lookup('{}')}${lookup('{}')}`, 'trailing_data'],
    ['a trailing comma', lookup(`{"x":"${CANARY}",}`), 'syntax'],
    ['single quotes', `{'tool':'lookup_order','args':{'x':'${CANARY}'}}`, 'syntax'],
    ['a comment', `{"tool":"lookup_order", /* ${CANARY} */ "args":{}}`, 'syntax'],
    ['NaN', lookup(`{"x":NaN,"y":"${CANARY}"}`), 'syntax'],
    ['a leading zero', lookup(`{"x":010,"y":"${CANARY}"}`), 'syntax'],
    ['a raw control character in a string', lookup(`{"x":"${CANARY}\u0001"}`), 'syntax'],
    ['unterminated', lookup(`{"x":"${CANARY}"`), 'syntax'],
    ['whitespace only', '   \n ', 'empty'],
  ];
  for (const [name, payload, code] of cases) {
    it(name, async () => {
      const body = expectProblem(await raw(payload), 400, 'bad_json');
      expect(body.errors?.[0]?.message).toBe(code);
      expect(body.detail).toMatch(/at byte \d+/);
    });
  }

  it('the error says where: the JSON pointer of the value being parsed', async () => {
    const body = expectProblem(await raw(lookup(`{"deep":{"note":"\\ud800${CANARY}"}}`)), 400, 'bad_json');
    expect(body.errors).toEqual([{ pointer: '/args/deep/note', message: 'lone_surrogate' }]);
  });

  it('a valid surrogate pair is accepted (control)', async () => {
    const res = await raw(lookup('{"note":"\\ud83d\\ude00"}'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ decision: 'allow' });
  });
});

describe('nesting', () => {
  /** A /decide body whose total nesting (the outer object counts 1) is `depth`. */
  const nested = (depth: number): string =>
    `{"tool":"lookup_order","args":${'{"a":'.repeat(depth - 1)}1${'}'.repeat(depth - 1)}}`;

  it('depth 256 is accepted (control)', async () => {
    const res = await raw(nested(256));
    expect(res.statusCode).toBe(200);
  });
  it('depth 257 is 400 too_deep', async () => {
    const body = expectProblem(await raw(nested(257)), 400, 'bad_json');
    expect(body.errors?.[0]?.message).toBe('too_deep');
  });
  it('depth 100,000 of arrays is 400, without a crash', async () => {
    const payload = lookup(`{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    const body = expectProblem(await raw(payload), 400, 'bad_json');
    expect(body.errors?.[0]?.message).toBe('too_deep');
  });
  it('depth 100,000 of objects, unterminated, is 400, without a crash', async () => {
    const body = expectProblem(await raw(lookup('{"a":'.repeat(100_000))), 400, 'bad_json');
    expect(body.errors?.[0]?.message).toBe('too_deep');
    // The service is still answering.
    expect((await raw(lookup('{}'))).statusCode).toBe(200);
  });
});

describe('invalid UTF-8 bytes (sent as a Buffer): 400 invalid_utf8, never U+FFFD', () => {
  const cases: [string, number[]][] = [
    ['C3 28 (bad continuation)', [0xc3, 0x28]],
    ['C0 AF (overlong /)', [0xc0, 0xaf]],
    ['ED A0 80 (CESU surrogate)', [0xed, 0xa0, 0x80]],
    ['F5 (beyond U+10FFFF)', [0xf5, 0x80, 0x80, 0x80]],
    ['FF', [0xff]],
  ];
  for (const [name, bytes] of cases) {
    it(`in a value: ${name}`, async () => {
      const payload = Buffer.concat([
        Buffer.from(`{"tool":"lookup_order","args":{"x":"${CANARY}`),
        Buffer.from(bytes),
        Buffer.from('"}}'),
      ]);
      const body = expectProblem(await raw(payload), 400, 'bad_json');
      expect(body.errors?.[0]?.message).toBe('invalid_utf8');
    });
  }
  it('in a key', async () => {
    const payload = Buffer.concat([
      Buffer.from('{"tool":"lookup_order","args":{"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from(`":"${CANARY}"}}`),
    ]);
    const body = expectProblem(await raw(payload), 400, 'bad_json');
    expect(body.errors?.[0]?.message).toBe('invalid_utf8');
  });
  it('truncated multibyte sequence at the very end of the body', async () => {
    const payload = Buffer.concat([Buffer.from(lookup(`{"x":"${CANARY}"}`)), Buffer.from([0xe2, 0x82])]);
    const body = expectProblem(await raw(payload), 400, 'bad_json');
    expect(body.errors?.[0]?.message).toBe('invalid_utf8');
  });
  it('truncated multibyte sequence inside an unterminated string at the end', async () => {
    const payload = Buffer.concat([
      Buffer.from(`{"tool":"lookup_order","args":{"x":"${CANARY}`),
      Buffer.from([0xe2, 0x82]),
    ]);
    const body = expectProblem(await raw(payload), 400, 'bad_json');
    expect(body.errors?.[0]?.message).toBe('invalid_utf8');
  });
  it('valid multibyte UTF-8 is accepted (control)', async () => {
    const res = await raw(Buffer.from(lookup('{"note":"café ✓ 😀"}'), 'utf8'));
    expect(res.statusCode).toBe(200);
  });
});

describe('bodies that are not a request object', () => {
  it('an empty body with Content-Type application/json is 400', async () => {
    expectProblem(await raw(''), 400, 'bad_json');
  });
  it('no body and no Content-Type is refused (4xx), not decided', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/decide', headers: bearer(agentToken()) });
    const body = expectProblem(res, 422, 'invalid_body');
    expect(body.errors?.[0]?.pointer).toBe('');
  });
  for (const [whole, status, code] of [
    ['null', 422, 'invalid_body'],
    ['[]', 422, 'invalid_body'],
    ['"x"', 422, 'invalid_body'],
    ['true', 422, 'invalid_body'],
    ['42', 422, 'invalid_body'],
  ] as const) {
    it(`${whole} as the whole body is ${status} ${code}`, async () => {
      const body = expectProblem(await raw(whole), status, code);
      expect(body.errors?.[0]?.pointer).toBe('');
    });
  }
});

describe('media type: only application/json (optionally ; charset=utf-8)', () => {
  const body = lookup(`{"x":"${CANARY}"}`);
  const refused: [string, Record<string, string>][] = [
    ['text/plain', { 'content-type': 'text/plain' }],
    ['missing Content-Type with a body', {}],
    ['application/json, text/plain', { 'content-type': 'application/json, text/plain' }],
    ['a leading space', { 'content-type': ' application/json' }],
    ['a tab before ;', { 'content-type': 'application/json\t; charset=utf-8' }],
    ['a space before ;', { 'content-type': 'application/json ;charset=utf-8' }],
    ['application/json; bare', { 'content-type': 'application/json;' }],
    ['charset=utf-16', { 'content-type': 'application/json; charset=utf-16' }],
    ['charset=latin1', { 'content-type': 'application/json; charset=iso-8859-1' }],
    ['an extra parameter', { 'content-type': 'application/json; charset=utf-8; boundary=x' }],
    ['application/jsonx', { 'content-type': 'application/jsonx' }],
    ['application/json-patch+json', { 'content-type': 'application/json-patch+json' }],
    ['application/problem+json', { 'content-type': 'application/problem+json' }],
    ['text/json', { 'content-type': 'text/json' }],
    ['multipart/form-data', { 'content-type': 'multipart/form-data; boundary=xyz' }],
    ['application/x-www-form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['Content-Encoding: gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
    ['Content-Encoding: br', { 'content-type': 'application/json', 'content-encoding': 'br' }],
    ['Content-Encoding: deflate', { 'content-type': 'application/json', 'content-encoding': 'deflate' }],
  ];
  for (const [name, headers] of refused) {
    it(`${name} → 415`, async () => {
      expectProblem(await raw(body, headers), 415, 'unsupported_media_type');
    });
  }
  it('a schema-invalid body under a refused media type is still 415 (the type is checked first)', async () => {
    expectProblem(await raw('{"tool":["x"]}', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
  });

  const accepted: [string, Record<string, string>][] = [
    ['application/json', { 'content-type': 'application/json' }],
    ['application/json; charset=utf-8', { 'content-type': 'application/json; charset=utf-8' }],
    ['APPLICATION/JSON; CHARSET=UTF-8', { 'content-type': 'APPLICATION/JSON; CHARSET=UTF-8' }],
    ['Content-Encoding: identity', { 'content-type': 'application/json', 'content-encoding': 'identity' }],
  ];
  for (const [name, headers] of accepted) {
    it(`${name} is parsed`, async () => {
      const res = await raw(lookup('{"order":"A1"}'), headers);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ decision: 'allow' });
      // The same type, with a schema-invalid body, reaches the validator: 422, not 200 and not 415.
      expectProblem(await raw('{"tool":["lookup_order"]}', headers), 422, 'invalid_body');
    });
  }
});

describe('size: BODY_LIMIT', () => {
  let small: TestApp;
  const LIMIT = 1024;
  beforeAll(async () => {
    small = await createTestApp({ env: 'prod', bodyLimit: LIMIT });
  });
  afterAll(async () => small.close());
  /** A valid /decide body of exactly n bytes. */
  const ofSize = (n: number): string => {
    const head = '{"tool":"lookup_order","args":{"pad":"';
    const tail = '"}}';
    return head + 'p'.repeat(n - head.length - tail.length) + tail;
  };

  it('a body of exactly BODY_LIMIT bytes is accepted', async () => {
    const payload = ofSize(LIMIT);
    expect(Buffer.byteLength(payload)).toBe(LIMIT);
    expect((await raw(payload, undefined, small.app)).statusCode).toBe(200);
  });
  it('one byte over is 413', async () => {
    expectProblem(await raw(ofSize(LIMIT + 1), undefined, small.app), 413, 'body_too_large');
  });
  it('far over (with a canary inside) is 413', async () => {
    const payload = lookup(`{"x":"${CANARY}${'z'.repeat(100_000)}"}`);
    expectProblem(await raw(payload, undefined, small.app), 413, 'body_too_large');
  });
  it('multibyte characters count as bytes, not characters', async () => {
    const payload = lookup(`{"x":"${'é'.repeat(600)}"}`); // 600 characters, 1200 bytes of them
    expect(payload.length).toBeLessThan(LIMIT);
    expectProblem(await raw(payload, undefined, small.app), 413, 'body_too_large');
  });
});

describe('schema: refused, never coerced or stripped', () => {
  it('an unknown top-level field → 422 with its pointer', async () => {
    const body = expectProblem(
      await post(t.app, '/decide', { tool: 'lookup_order', args: {}, extra: CANARY }),
      422,
      'invalid_body',
    );
    expect(body.errors).toContainEqual({ pointer: '/extra', message: 'unknown field' });
  });
  it('an unknown field in run → 422 with its pointer', async () => {
    const body = expectProblem(
      await post(t.app, '/decide', { tool: 'lookup_order', run: { id: 'r', admin: CANARY } }),
      422,
      'invalid_body',
    );
    expect(body.errors).toContainEqual({ pointer: '/run/admin', message: 'unknown field' });
  });
  for (const field of ['team', 'user', 'agent', 'roles', 'sub', 'identity', 'claims']) {
    it(`"${field}" in the body → 422 identity_in_body (never silently stripped)`, async () => {
      const value = field === 'roles' ? [CANARY, 'approver'] : CANARY;
      const body = expectProblem(
        await post(t.app, '/decide', { tool: 'lookup_order', args: {}, [field]: value }),
        422,
        'identity_in_body',
      );
      expect(body.errors).toContainEqual({ pointer: `/${field}`, message: 'unknown field' });
      expect(body.detail).toContain(`"${field}"`);
    });
  }
  it('identity fields are refused on /explain and /approvals too', async () => {
    expectProblem(
      await post(t.app, '/explain', { tool: 'lookup_order', team: CANARY }, approverToken()),
      422,
      'identity_in_body',
    );
    // No database here: the body is validated before the route would answer 503.
    expectProblem(
      await post(t.app, '/approvals', { tool: 'refund', args: { order: 'A1', amount: 120 }, user: CANARY }),
      422,
      'identity_in_body',
    );
  });
  it("args.team is plain data: accepted, and the principal is the token's", async () => {
    const refund = { tool: 'refund', args: { order: 'A1', amount: 40 } };
    // The payments refund schema has additionalProperties:false, so look at a lookup for acceptance…
    const res = await post(
      t.app,
      '/decide',
      { tool: 'lookup_order', args: { team: 'support', user: 'admin', roles: ['admin'] } },
      token({ team: 'sales' }),
    );
    expect(res.statusCode).toBe(200);
    // …and at /explain for the principal: the refund rule for team support does not match a sales token.
    const ex = await post(t.app, '/explain', { ...refund }, token({ team: 'sales', roles: ['approver'] }));
    expect(ex.statusCode).toBe(403);
    expect(ex.json()).toMatchObject({ decision: 'deny', rule: 'payments#default' });
  });
  it('a wrong-typed tool is 422; 123 is not coerced to "123"', async () => {
    for (const tool of [123, true, null, ['lookup_order'], { name: 'lookup_order' }]) {
      const body = expectProblem(await post(t.app, '/decide', { tool, args: { x: CANARY } }), 422, 'invalid_body');
      expect(body.errors?.map((e) => e.pointer)).toContain('/tool');
    }
  });
  it('a missing tool is 422', async () => {
    expectProblem(await post(t.app, '/decide', { args: { x: CANARY } }), 422, 'invalid_body');
  });
  it('args that are not an object are 422', async () => {
    for (const args of [[CANARY], CANARY, 1, null]) {
      const body = expectProblem(await post(t.app, '/decide', { tool: 'lookup_order', args }), 422, 'invalid_body');
      expect(body.errors?.map((e) => e.pointer)).toContain('/args');
    }
  });
  it('approval_id of the wrong type is 422, not coerced', async () => {
    expectProblem(await post(t.app, '/decide', { tool: 'lookup_order', approval_id: 123 }), 422, 'invalid_body');
  });
  const badNames: [string, string][] = [
    ['a space', 'lookup order'],
    ['a trailing space', 'lookup_order '],
    ['a Cyrillic look-alike', 'lооkup_order'],
    ['full-width letters', 'ｌｏｏｋｕｐ_order'],
    ['a zero-width space', 'lookup\u200b_order'],
    ['a right-to-left override', 'lookup_\u202eorder'],
    ['a NUL', 'lookup_order\u0000'],
    ['empty', ''],
    ['129 characters', 'a'.repeat(129)],
    ['a leading dot', '.lookup_order'],
  ];
  for (const [name, tool] of badNames) {
    it(`a tool name with ${name} is 422`, async () => {
      const body = expectProblem(await post(t.app, '/decide', { tool, args: { x: CANARY } }), 422, 'invalid_body');
      expect(body.errors?.map((e) => e.pointer)).toContain('/tool');
    });
  }
  // A `.` or `..` path segment: `lookup_*` would allow lookup_/../wipe_orders, which a tool mapping
  // names to paths or routes may resolve to wipe_orders.
  const dotSegments = [
    'lookup_/../wipe_orders',
    'lookup_/./order',
    'a/./b',
    'a/..',
    'a/.',
    'lookup_/..',
    'lookup_x/../../wipe_orders',
    'a/../',
  ];
  for (const tool of dotSegments) {
    it(`a tool name with a dot segment is 422 naming /tool on /decide, /explain and /approvals: ${tool}`, async () => {
      for (const [url, tok] of [
        ['/decide', agentToken()],
        ['/explain', approverToken()],
        ['/approvals', agentToken()],
      ] as const) {
        const body = expectProblem(await post(t.app, url, { tool, args: { x: CANARY } }, tok), 422, 'invalid_body');
        expect(
          body.errors?.map((e) => e.pointer),
          url,
        ).toEqual(['/tool']);
      }
    });
  }
  it('dots that are not a whole path segment are ordinary characters', async () => {
    for (const tool of [
      'github.get_issue',
      'v1.2',
      'lookup_.order',
      'lookup_/.hidden',
      'lookup_/...',
      'lookup_..order',
      'mcp:fs/read.file',
    ]) {
      const res = await post(t.app, '/decide', { tool });
      expect(res.statusCode, `${tool}: ${res.body}`).not.toBe(422);
    }
    // Still matched by the glob as before: lookup_* allows lookup_.order.
    expect((await post(t.app, '/decide', { tool: 'lookup_.order' })).json()).toMatchObject({
      decision: 'allow',
      rule: 'lookups',
    });
  });
  it('a 128-character tool name is inside the grammar (an unknown tool: denied, not refused)', async () => {
    const res = await post(t.app, '/decide', { tool: 'a'.repeat(128) });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ decision: 'deny' });
  });
});

describe('prototype keys are data', () => {
  it('__proto__ and constructor inside args are plain keys; Object.prototype stays clean', async () => {
    const payload = lookup(
      '{"__proto__":{"polluted":"yes","isAdmin":true},"constructor":{"prototype":{"polluted":1}},"nested":{"a":{"b":{"__proto__":{"isAdmin":true}}}}}',
    );
    const res = await raw(payload);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ decision: 'allow', rule: 'lookups' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
  it('an escaped __proto__ key (\\u005f_proto__) is the same plain key', async () => {
    const res = await raw(lookup('{"\\u005f_proto__":{"isAdmin":true}}'));
    expect(res.statusCode).toBe(200);
  });
  it('__proto__ twice (once escaped) is a duplicate key', async () => {
    expectProblem(await raw(lookup(`{"__proto__":1,"\\u005f_proto__":"${CANARY}"}`)), 400, 'bad_json');
  });
  it('__proto__ at the top level is an unknown field, not a prototype', async () => {
    const body = expectProblem(
      await raw(`{"tool":"lookup_order","__proto__":{"tool":"wipe_orders","x":"${CANARY}"}}`),
      422,
      'invalid_body',
    );
    expect(body.errors).toContainEqual({ pointer: '/__proto__', message: 'unknown field' });
  });
  it('__proto__ cannot smuggle a tool name past the schema', async () => {
    const res = await raw('{"__proto__":{"tool":"lookup_order"},"tool":"wipe_orders"}');
    expectProblem(res, 422, 'invalid_body');
    const noTool = await raw('{"__proto__":{"tool":"lookup_order"}}');
    expectProblem(noTool, 422, 'invalid_body');
  });
  it('own-property names like toString and hasOwnProperty are data', async () => {
    const res = await raw(lookup('{"toString":"x","hasOwnProperty":1,"valueOf":null,"__defineGetter__":[]}'));
    expect(res.statusCode).toBe(200);
  });
});

describe('HTTP framing, over a real socket: refusals are problem+json too', () => {
  let port: number;
  beforeAll(async () => {
    port = await listenLoopback(t.app);
  });

  /** The one answer on a fresh connection. */
  async function only(parts: (string | Buffer)[]): Promise<RawResponse> {
    const result = await rawHttp(port, parts);
    expect(result.timedOut).toBe(false);
    expect(result.responses).toHaveLength(1);
    return result.responses[0]!;
  }
  function problemOf(res: RawResponse, status: number, code: string): ProblemBody {
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(res.body) as ProblemBody;
    expect(body).toMatchObject({ status, code });
    expect(body).not.toHaveProperty('decision');
    return body;
  }
  const chunk = (text: string): string => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n0\r\n\r\n`;
  const head = (lines: string[]): string =>
    `${['POST /decide HTTP/1.1', 'Connection: close', `Authorization: Bearer ${agentToken()}`, 'Content-Type: application/json', ...lines].join('\r\n')}\r\n\r\n`;

  it('two Content-Type headers are 400 problem+json naming the header, whatever their values or case', async () => {
    // Node keeps the first and drops the rest; a proxy in front may keep another: as with Authorization.
    const payload = lookup('{"order":"A1"}');
    for (const pair of [
      ['Content-Type: text/plain'],
      ['content-type: application/json'],
      ['CONTENT-TYPE: application/json; charset=utf-8'],
    ]) {
      const res = await only([head(['Host: 127.0.0.1', ...pair, `Content-Length: ${payload.length}`]) + payload]);
      expect(problemOf(res, 400, 'bad_request').detail).toBe('send exactly one Content-Type header');
    }
    // Chunked, and on a GET without a body: refused all the same.
    const chunked = await only([
      head(['Host: 127.0.0.1', 'Content-Type: application/json', 'Transfer-Encoding: chunked']) + chunk(payload),
    ]);
    problemOf(chunked, 400, 'bad_request');
    const get = await only([
      `GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: a/b\r\ncontent-type: c/d\r\n\r\n`,
    ]);
    problemOf(get, 400, 'bad_request');
  });
  it('one Content-Type is parsed (control)', async () => {
    const payload = lookup('{"order":"A1"}');
    const res = await only([head(['Host: 127.0.0.1', `Content-Length: ${payload.length}`]) + payload]);
    expect(res.statusCode, res.body).toBe(200);
  });
  it('Transfer-Encoding: gzip, chunked is 415 naming the header (the body is never parsed as if plain)', async () => {
    const body = problemOf(
      await only([head(['Host: 127.0.0.1', 'Transfer-Encoding: gzip, chunked']) + chunk(lookup('{"order":"A1"}'))]),
      415,
      'unsupported_media_type',
    );
    expect(body.detail).toMatch(/Transfer-Encoding/);
  });
  it('Transfer-Encoding: chunked alone is parsed (control)', async () => {
    const res = await only(rawPost(agentToken(), '', { chunks: [Buffer.from(lookup('{"order":"A1"}'))] }));
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ decision: 'allow' });
  });
  it('an HTTP/1.1 request without Host is 400 problem+json naming the header, before authentication', async () => {
    const res = await only([`GET /policies HTTP/1.1\r\nConnection: close\r\n\r\n`]);
    expect(problemOf(res, 400, 'bad_request').detail).toMatch(/Host/);
  });
  it('an HTTP/1.0 request needs no Host (control)', async () => {
    const res = await only([`GET /healthz HTTP/1.0\r\n\r\n`]);
    expect(res.statusCode, res.body).toBe(200);
  });
  it('Expect other than 100-continue is 400 problem+json naming the header; the request is not decided', async () => {
    const payload = lookup('{"order":"A1"}');
    const res = await only([head(['Host: 127.0.0.1', 'Expect: bogus', `Content-Length: ${payload.length}`]) + payload]);
    expect(problemOf(res, 400, 'bad_request').detail).toMatch(/Expect/);
  });
  it('Expect: 100-continue gets 100 Continue, then the answer (control)', async () => {
    const payload = lookup('{"order":"A1"}');
    const result = await rawHttp(
      port,
      [head(['Host: 127.0.0.1', 'Expect: 100-continue', `Content-Length: ${payload.length}`]), payload],
      { gapMs: 20 },
    );
    expect(result.responses.map((r) => r.statusCode)).toEqual([100, 200]);
  });
});
