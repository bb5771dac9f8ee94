// POST /usage against a real PostgreSQL (docs/spec.md section 5.9): reporting is a role; a report
// counts only into the counters the reporter's own calls count, never a `global` one, unless the
// reporter holds USAGE_ANY_ROLE (which may also report `for` another identity); one report is a
// finite decimal above 0, at most USAGE_MAX_USD, checked on the number as written. And counters are
// written exactly as counted wherever they are shown: never `1e+21`, never a double's rounding.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { amountOfText } from '../../src/policy/amount.js';
import {
  adminToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  readerToken,
  token,
  USAGE_ANY_ROLE,
  USAGE_ROLE,
  type TestApp,
} from '../helpers/app.js';
import { expectProblemJson } from '../helpers/http.js';
import { policyDir } from '../helpers/process.js';

const POLICY = `policy: spend
default: allow
budgets:
  - {id: llm-user, tools: llm, max_usd: 50, per: day, scope: user, on_exceed: deny}
  - {id: llm-sales, tools: llm, teams: [sales], max_usd: 200, per: day, scope: team, on_exceed: deny}
  - {id: search-everyone, tools: web_search, max_usd: 10, per: day, scope: global, on_exceed: deny}
  - {id: per-agent, tools: agent_tool, max_usd: 5, per: day, scope: agent}
  - {id: big-spend, tools: big_model, max_usd: 10000000000, per: day, scope: user}
  - {id: big-sum, tools: pay, sum: amount, max: 10000000000000000000000, per: day, scope: user, on_exceed: deny}
`;

// biome-ignore lint/suspicious/noExplicitAny: response bodies, read freely after their status is checked
type Body = any;

let dir: string;
let t: TestApp;
/** USAGE_MAX_USD of a billion: counters past a double's precision. */
let wide: TestApp;
const wideLogs: Record<string, unknown>[] = [];
beforeAll(async () => {
  dir = await policyDir({ 'spend.yaml': POLICY });
  t = await createTestApp({ policyDir: dir, env: null, database: true });
  wide = await createTestApp({
    policyDir: dir,
    env: null,
    database: true,
    logs: wideLogs,
    usage: { maxUsd: amountOfText('1000000000')! },
  });
});
afterAll(async () => {
  await Promise.all([t?.close(), wide?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const unique = (label: string): string => `${label}-${randomUUID().slice(0, 8)}`;
const reporter = (sub = unique('agent'), claims: Record<string, unknown> = {}): string =>
  token({ sub, team: 'support', roles: [USAGE_ROLE], ...claims });
const billing = (): string => token({ sub: unique('billing'), team: 'finance', roles: [USAGE_ANY_ROLE] });

/** POST /usage with the body as written (numbers such as 1e308 kept as they are). */
const report = (text: string, tok: string, app = t): Promise<LightMyRequestResponse> =>
  app.app.inject({
    method: 'POST',
    url: '/usage',
    headers: { ...bearer(tok), 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    payload: text,
  });
const usage = (body: unknown, tok: string, app = t) => report(JSON.stringify(body), tok, app);
const budgets = (tok: string, app = t) => app.app.inject({ method: 'GET', url: '/budgets', headers: bearer(tok) });

/** Every counter of a limit, as an admin sees them: `for` and `counted`. */
async function countersOf(id: string, app = t): Promise<{ for: Body; counted: number }[]> {
  const res = await budgets(adminToken(), app);
  expect(res.statusCode, res.body).toBe(200);
  const limit = (res.json() as Body).limits.find((l: Body) => l.id === id);
  return limit.counters.map((c: Body) => ({ for: c.for, counted: c.counted }));
}

describe('who may report spend', () => {
  it('a caller without USAGE_ROLE or USAGE_ANY_ROLE is 403 before its body is read, and nothing is recorded', async () => {
    const sub = unique('agent');
    for (const tok of [token({ sub, team: 'support' }), approverToken(), adminToken()]) {
      const refused = expectProblemJson(await report('{"tool":"llm","usd":5}', tok), 403, 'forbidden');
      expect(refused.detail).toBe(`this needs one of the roles "${USAGE_ROLE}", "${USAGE_ANY_ROLE}"`);
      // Not even a broken body is read: the answer is the same.
      expectProblemJson(await report('{"tool":', tok), 403, 'forbidden');
    }
    expect((await countersOf('llm-user')).filter((c) => c.for.user === sub)).toEqual([]);
  });

  it("an agent's report of usd 1e308 to a global budget is refused, and every team still calls", async () => {
    const tok = reporter();
    const huge = expectProblemJson(await report('{"tool":"web_search","usd":1e308}', tok), 422, 'invalid_body');
    expect(huge.errors).toEqual([{ pointer: '/usd', message: 'must be at most 100 (USAGE_MAX_USD)' }]);
    expect(huge.detail).not.toContain('1e308');
    // Within the cap, a global counter is still not the reporter's own: every caller shares it.
    const shared = expectProblemJson(await usage({ tool: 'web_search', usd: 5 }, tok), 403, 'forbidden');
    expect(shared.detail).toBe(
      `budget "search-everyone" counts the spend of every caller: reporting into it needs the role "${USAGE_ANY_ROLE}" (USAGE_ANY_ROLE); nothing was recorded`,
    );
    expect(await countersOf('search-everyone')).toEqual([]);
    for (const team of ['sales', 'support', 'ops']) {
      const res = await post(t.app, '/decide', { tool: 'web_search' }, token({ sub: unique('caller'), team }));
      expect(res.json(), team).toMatchObject({ decision: 'allow' });
    }
    // A billing pipeline (USAGE_ANY_ROLE) counts into it.
    const counted = await usage({ tool: 'web_search', usd: 4 }, billing());
    expect(counted.statusCode, counted.body).toBe(200);
    expect(counted.json()).toMatchObject({
      usd: 4,
      recorded: [{ id: 'search-everyone', scope: 'global', counted: 4, reached: false }],
    });
    expect(await countersOf('search-everyone')).toEqual([{ for: {}, counted: 4 }]);
  });

  it("a report counts only into the counters the reporter's own calls of the tool count", async () => {
    const [a, b, bystander] = [unique('support-agent'), unique('sales-agent'), unique('bystander')];
    const fromSupport = await usage({ tool: 'llm', usd: 7 }, reporter(a));
    expect(fromSupport.json().recorded.map((r: Body) => [r.id, r.counted])).toEqual([['llm-user', 7]]);
    // llm-sales selects team sales only; a sales agent's report counts in its user and team counters.
    const fromSales = await usage({ tool: 'llm', usd: 3 }, reporter(b, { team: 'sales' }));
    expect(fromSales.json().recorded.map((r: Body) => [r.id, r.counted])).toEqual([
      ['llm-user', 3],
      ['llm-sales', 3],
    ]);
    const users = await countersOf('llm-user');
    expect(users).toEqual(
      expect.arrayContaining([
        { for: { user: a }, counted: 7 },
        { for: { user: b }, counted: 3 },
      ]),
    );
    expect(users.some((c) => c.for.user === bystander)).toBe(false);
    expect(await countersOf('llm-sales')).toEqual([{ for: { team: 'sales' }, counted: 3 }]);
  });

  it('USAGE_ANY_ROLE reports for another identity (`for`) into its counters; USAGE_ROLE may not', async () => {
    const other = unique('agent');
    const refused = expectProblemJson(
      await usage({ tool: 'llm', usd: 1, for: { user: other } }, reporter()),
      403,
      'forbidden',
    );
    expect(refused.detail).toBe(
      `reporting spend for another identity ("for") needs the role "${USAGE_ANY_ROLE}" (USAGE_ANY_ROLE)`,
    );
    expect((await countersOf('llm-user')).filter((c) => c.for.user === other)).toEqual([]);

    const pipeline = billing();
    const res = await usage({ tool: 'llm', usd: 2.5, for: { user: other, team: 'sales' } }, pipeline);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ usd: 2.5, for: { user: other, team: 'sales' } });
    expect(res.json().recorded.map((r: Body) => r.id)).toEqual(['llm-user', 'llm-sales']);
    // The agent sees it as its own spend; the pipeline's own counter is untouched.
    const mine = (await budgets(token({ sub: other, team: 'sales' }))).json() as Body;
    expect(mine.limits.find((l: Body) => l.id === 'llm-user').counters).toMatchObject([
      { for: { user: other }, counted: 2.5 },
    ]);
    const own = (await budgets(pipeline)).json() as Body;
    expect(own.limits.find((l: Body) => l.id === 'llm-user').counters).toMatchObject([{ counted: 0 }]);

    // `for` as a token would name the identity: no control or invisible characters, known keys only,
    // and what a selecting budget counts by.
    const control = expectProblemJson(
      await usage({ tool: 'llm', usd: 1, for: { user: 'a\nb' } }, pipeline),
      422,
      'invalid_body',
    );
    expect(control.errors).toEqual([
      { pointer: '/for/user', message: 'must not contain control, invisible or unpaired characters' },
    ]);
    const bidi = expectProblemJson(
      await usage({ tool: 'llm', usd: 1, for: { user: 'x', team: 'sa\u202eles' } }, pipeline),
      422,
      'invalid_body',
    );
    expect(bidi.errors).toEqual([
      { pointer: '/for/team', message: 'must not contain control, invisible or unpaired characters' },
    ]);
    expect(
      expectProblemJson(
        await usage({ tool: 'llm', usd: 1, for: { user: 'x', sub: 'x' } }, pipeline),
        422,
        'invalid_body',
      ).errors,
    ).toContainEqual({
      pointer: '/for/sub',
      message: 'unknown field',
    });
    const lost = expectProblemJson(
      await usage({ tool: 'agent_tool', usd: 1, for: { user: other } }, pipeline),
      422,
      'usage_unattributable',
    );
    expect(lost.errors).toEqual([{ pointer: '/for', message: 'unattributable' }]);
    expect(await countersOf('per-agent')).toEqual([]);
  });
});

describe('usd: a finite decimal above 0, at most USAGE_MAX_USD, checked as written', () => {
  const GREATER = 'must be greater than 0';
  const CAP = 'must be at most 100 (USAGE_MAX_USD)';
  const DECIMALS = 'must have at most 12 digits after the decimal point';
  const refusals: [string, string][] = [
    ['0', GREATER],
    ['-0', GREATER],
    ['0.0', GREATER],
    ['0e5', GREATER],
    ['-1', GREATER],
    ['-1e308', GREATER],
    ['1e308', CAP],
    ['1E3', CAP],
    ['100.000000000001', CAP],
    ['100.0000000000000000000001', CAP],
    ['0.0000000000001', DECIMALS],
    ['1e-13', DECIMALS],
    ['5e-324', DECIMALS],
    ['0.1000000000000000055511151231257827', DECIMALS],
  ];

  it.each(refusals)('usd %s: 422 naming /usd and the rule, nothing recorded', async (lexeme, rule) => {
    const sub = unique('agent');
    const res = expectProblemJson(await report(`{"tool":"llm","usd":${lexeme}}`, reporter(sub)), 422, 'invalid_body');
    expect(res.errors).toEqual([{ pointer: '/usd', message: rule }]);
    expect(res.detail).toBe(`usd ${rule}: a report is a finite decimal above 0, at most USAGE_MAX_USD`);
    expect((await countersOf('llm-user')).filter((c) => c.for.user === sub)).toEqual([]);
  });

  it('a number no double holds is not JSON the service reads (400); a string is not a number (422)', async () => {
    expectProblemJson(await report('{"tool":"llm","usd":1e400}', reporter()), 400, 'bad_json');
    expect(expectProblemJson(await usage({ tool: 'llm', usd: '1' }, reporter()), 422, 'invalid_body').errors).toEqual([
      { pointer: '/usd', message: 'must be number' },
    ]);
  });

  it('the cap itself, an exponent within it and a picodollar are counted, and answered in plain decimal', async () => {
    const sub = unique('agent');
    const tok = reporter(sub);
    for (const [lexeme, plain] of [
      ['100', '100'],
      ['1e1', '10'],
      ['100.0', '100'],
      ['0.000000000001', '0.000000000001'],
      ['1.5e-3', '0.0015'],
    ] as const) {
      const res = await report(`{"tool":"big_model","usd":${lexeme}}`, tok);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body, lexeme).toContain(`"usd":${plain}}`);
    }
    expect(await countersOf('big-spend')).toContainEqual({ for: { user: sub }, counted: 210.001500000001 });
  });

  it('a number within the cap that a double does not hold as written is refused (USAGE_MAX_USD 1000000000)', async () => {
    const res = expectProblemJson(
      await report('{"tool":"big_model","usd":123456789.123456789012}', reporter(), wide),
      422,
      'invalid_body',
    );
    expect(res.errors).toEqual([{ pointer: '/usd', message: 'must be written as a double holds it (not exact)' }]);
  });

  it('USAGE_ROLE, USAGE_ANY_ROLE and USAGE_MAX_USD are the configured ones', async () => {
    const custom = await createTestApp({
      policyDir: dir,
      env: null,
      database: true,
      usage: { role: 'spend-writer', anyRole: 'ledger', maxUsd: amountOfText('5')! },
    });
    try {
      expectProblemJson(await usage({ tool: 'llm', usd: 1 }, reporter(), custom), 403, 'forbidden');
      const writer = token({ sub: unique('agent'), roles: ['spend-writer'] });
      expect(
        expectProblemJson(await usage({ tool: 'llm', usd: 6 }, writer, custom), 422, 'invalid_body').errors,
      ).toEqual([{ pointer: '/usd', message: 'must be at most 5 (USAGE_MAX_USD)' }]);
      expect((await usage({ tool: 'llm', usd: 5 }, writer, custom)).statusCode).toBe(200);
      expectProblemJson(await usage({ tool: 'web_search', usd: 1 }, writer, custom), 403, 'forbidden');
      expect(
        (await usage({ tool: 'web_search', usd: 1 }, token({ sub: 'ledger-1', roles: ['ledger'] }), custom)).statusCode,
      ).toBe(200);
    } finally {
      await custom.close();
    }
  });
});

describe('counters are written exactly as counted', () => {
  /** A JSON number in exponent form (a member's value, not text inside a string). */
  const FLOAT_FORM = /:-?\d+(?:\.\d+)?[eE][+-]?\d/;

  it('spend past a double’s precision: the answer, GET /budgets and the log line say 999999999.000000000001', async () => {
    const sub = unique('agent');
    const tok = reporter(sub);
    expect((await usage({ tool: 'big_model', usd: 999999999 }, tok, wide)).statusCode).toBe(200);
    const res = await report('{"tool":"big_model","usd":0.000000000001}', tok, wide);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('"counted":999999999.000000000001');
    expect(res.body).toContain('"usd":0.000000000001');
    expect(res.body).not.toMatch(FLOAT_FORM);
    const mine = await budgets(tok, wide);
    expect(mine.body).toContain('"counted":999999999.000000000001');
    expect(mine.body).not.toMatch(FLOAT_FORM);
    const lines = wideLogs.filter((l) => l.msg === 'usage' && l.user === sub);
    expect(lines.map((l) => l.usd)).toEqual(['999999999', '0.000000000001']);
  });

  it('a sum budget of 1e21: GET /budgets, /explain and the decision log say 1000000000000000000000.000000000000001, never 1e+21', async () => {
    const sub = unique('payer');
    const tok = token({ sub, team: 'support' });
    const pay = (amount: string) =>
      wide.app.inject({
        method: 'POST',
        url: '/decide',
        headers: { ...bearer(tok), 'content-type': 'application/json' },
        payload: `{"tool":"pay","args":{"amount":${amount}}}`,
      });
    expect((await pay('1e21')).json()).toMatchObject({ decision: 'allow' });
    expect((await pay('0.000000000000001')).json()).toMatchObject({ decision: 'allow' });
    const exact = '1000000000000000000000.000000000000001';
    const mine = await budgets(tok, wide);
    expect(mine.body).toContain(`"counted":${exact}`);
    expect(mine.body).not.toMatch(FLOAT_FORM);
    const explained = await post(
      wide.app,
      '/explain',
      { tool: 'pay', args: { amount: 1 } },
      readerToken({ sub, team: 'support' }),
    );
    expect(explained.statusCode, explained.body).toBe(200);
    expect(explained.body).toContain(`"counter":{"counted":${exact},`);
    const decisions = wideLogs.filter((l) => l.msg === 'decision' && l.user === sub);
    expect(decisions.map((l) => (l.budgets as Body)[0].standing)).toEqual(['1000000000000000000000', exact]);
  });
});
