// Budgets and rate limits over HTTP against a real PostgreSQL (docs/spec.md section 2.9): every key of
// test/cases/budgets (whose YAML cases settle the same answers over written-down counters), counted
// for real: sum, max, per, scope and on_exceed; max_usd with POST /usage; rate limits, tools: [llm];
// the splitting attack caught by a budget that asks an operator, the grant counting its call; GET
// /budgets; /explain reading the counters; Idempotency-Key; no database; the sweep.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  adminToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  readerToken,
  token,
  USAGE_ROLE,
  type TestApp,
} from '../helpers/app.js';
import { expectProblemJson } from '../helpers/http.js';
import { eventually, policyDir } from '../helpers/process.js';

const POLICIES = 'test/cases/budgets';

// biome-ignore lint/suspicious/noExplicitAny: decision and approval bodies, read freely after their status is checked
type Body = any;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ policyDir: POLICIES, env: null, database: true });
});
afterAll(async () => t.close());

const unique = (label: string): string => `${label}-${randomUUID().slice(0, 8)}`;
const caller = (sub: string, extra: Record<string, unknown> = {}): string =>
  token({ sub, team: unique('team'), agent: unique('agent'), ...extra });
const decide = (body: unknown, tok: string, app = t): Promise<LightMyRequestResponse> =>
  post(app.app, '/decide', body, tok);
const refund = (amount: number | string, order = unique('O')) => ({ tool: 'refund', args: { order, amount } });
/** POST /decide with the body as written (numbers such as 500.00 kept as they are). */
const decideRaw = (text: string, tok: string): Promise<LightMyRequestResponse> =>
  t.app.inject({
    method: 'POST',
    url: '/decide',
    headers: { ...bearer(tok), 'content-type': 'application/json' },
    payload: text,
  });
const budgets = (tok: string, app = t) => app.app.inject({ method: 'GET', url: '/budgets', headers: bearer(tok) });
const usage = (body: unknown, tok: string, key: string | null = randomUUID(), app = t) =>
  app.app.inject({
    method: 'POST',
    url: '/usage',
    headers: {
      ...bearer(tok),
      'content-type': 'application/json',
      ...(key === null ? {} : { 'idempotency-key': key }),
    },
    payload: JSON.stringify(body),
  });

/** The caller's counter of one limit, as GET /budgets shows it (its first counter). */
async function counterOf(tok: string, id: string): Promise<Body> {
  const res = await budgets(tok);
  expect(res.statusCode, res.body).toBe(200);
  const limit = (res.json() as Body).limits.find((l: Body) => l.id === id);
  expect(limit, `limit ${id} in ${res.body}`).toBeDefined();
  return limit.counters[0] ?? null;
}

async function expectDecision(res: LightMyRequestResponse, decision: string, rule?: string): Promise<Body> {
  expect(res.statusCode, res.body).toBe(decision === 'allow' ? 200 : 403);
  const body = res.json() as Body;
  expect(body.decision, res.body).toBe(decision);
  if (rule !== undefined) expect(body.rule).toBe(rule);
  return body;
}

describe('a sum budget per user per day that asks an operator (sum, max, per: day, scope: user, on_exceed: require_approval)', () => {
  it('the splitting attack: ten refunds of 500 instead of one of 5,000 - the third one needs an operator, like the one of 5,000', async () => {
    const sub = unique('splitter');
    const tok = caller(sub, {});
    const answers: string[] = [];
    for (let i = 0; i < 10; i++) answers.push((await decide(refund(500), tok)).json().decision);
    // 500 + 500 = 1000 fits (a budget may be reached, not passed); every later one asks.
    expect(answers).toEqual(['allow', 'allow', ...Array(8).fill('require_approval')]);
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 1000, for: { user: sub } });
    // One refund of 5,000 asks too: by the rule, and by the budget (both are in the approval).
    const big = await expectDecision(
      await decide(refund(5000), caller(unique('honest'), {})),
      'require_approval',
      'refunds',
    );
    expect(big.approval.requirements.map((r: Body) => [r.rule, r.kind])).toEqual([
      ['refunds', 'confirm'],
      ['refunds-per-user', 'budget'],
    ]);
  });

  it('the approval shows the budget, its standing, the limit and the amount; the grant, redeemed, counts the call past the limit', async () => {
    const sub = unique('agent');
    const tok = caller(sub, {});
    await expectDecision(await decide(refund(900), tok), 'allow', 'refunds');
    const order = unique('O');
    const call = refund(500, order);
    const written = `{"tool":"refund","args":{"order":"${order}","amount":500.00}}`;
    const asked = await expectDecision(await decideRaw(written, tok), 'require_approval', 'refunds-per-user');
    expect(asked.next).toEqual({ action: 'file', url: '/approvals' });
    expect(asked.reason).toBe(
      'budget "refunds-per-user" allows 1000 of `amount` per day (UTC) per user, 900 counted in this window: this call would cross it',
    );
    expect(asked.message).not.toContain('500');
    const [req] = asked.approval.requirements;
    expect(req).toMatchObject({ policy: 'budgets', rule: 'refunds-per-user', kind: 'budget' });
    expect(req.presentation).toEqual({
      amount: 500,
      budget: 'refunds-per-user',
      max: 1000,
      per: 'day',
      scope: 'user',
      sum: 'amount',
    });
    expect(req.standing).toMatchObject({ counted: 900 });
    expect(Date.parse(req.standing.window_end) - Date.parse(req.standing.window_start)).toBe(86_400_000);
    expect(req.standing.window_start).toMatch(/T00:00:00\.000Z$/);

    // Another counted call moves the standing; the same call is still the same approval (the standing is not hashed).
    await expectDecision(await decide(refund(50), tok), 'allow');
    const again = await expectDecision(await decideRaw(written, tok), 'require_approval');
    expect(again.approval.requirements[0].standing.counted).toBe(950);
    expect(again.approval.hash).toBe(asked.approval.hash);
    // 500 and 500.00 are two requests (numbers as written, docs/spec.md section 4.2): another approval.
    expect((await decide(call, tok)).json().approval.hash).not.toBe(asked.approval.hash);

    // Filing it: 201, the same hash, what the operator reads.
    const filed = await t.app.inject({
      method: 'POST',
      url: '/approvals',
      headers: { ...bearer(tok), 'content-type': 'application/json' },
      payload: written,
    });
    expect(filed.statusCode, filed.body).toBe(201);
    const approval = filed.json() as Body;
    expect(approval).toMatchObject({ hash: asked.approval.hash, kind: 'budget', rule: 'refunds-per-user' });
    expect(approval.requirements[0].standing.counted).toBe(950);
    expect(approval.requirements[0].presentation.amount).toBe(500);
    expect(filed.body).toContain('"amount":500.00'); // as the request wrote it
    // Filing counted nothing.
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 950 });

    // Before the grant, citing it waits; nothing counted.
    const cite = written.replace(/}$/, `,"approval_id":"${approval.id}"}`);
    const early = await expectDecision(await decideRaw(cite, tok), 'require_approval');
    expect(early.next.action).toBe('wait');
    expect(
      (await post(t.app, `/approvals/${approval.id}/grant`, { note: 'customer called' }, approverToken())).statusCode,
    ).toBe(200);
    const redeemed = await expectDecision(await decideRaw(cite, tok), 'allow');
    expect(redeemed.approval).toMatchObject({ id: approval.id, status: 'consumed' });
    // Counted, past the limit: 950 + 500.
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 1450 });
    // Once: a second redeem is a new approval, and counts nothing.
    const twice = await expectDecision(await decideRaw(cite, tok), 'require_approval');
    expect(twice.next.action).toBe('file_new');
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 1450 });
  });

  it('a call the policy denies counts nowhere; a call one budget refuses counts in none of the others', async () => {
    const team = unique('team');
    const tok = caller(unique('agent'), { team });
    const teamTok = caller(unique('agent'), { team });
    await expectDecision(await decide({ tool: 'wipe_orders' }, tok), 'deny', 'no-wipe');
    // The team's month: 4,900 by a teammate (its user budget is its own).
    for (let i = 0; i < 5; i++)
      await expectDecision(await decide(refund(980), caller(unique('mate'), { team })), 'allow');
    expect(await counterOf(teamTok, 'refunds-per-team')).toMatchObject({ counted: 4900 });
    // 200 fits the user's day but not the team's month (deny is more severe than the user's approval).
    const refused = await expectDecision(await decide(refund(200), tok), 'deny', 'refunds-per-team');
    expect(refused.reason).toMatch(/per month \(UTC\) per team, 4900 counted/);
    expect(refused.approval).toBeUndefined();
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 0 });
    expect(await counterOf(tok, 'refunds-per-team')).toMatchObject({ counted: 4900 });
    // 100 fits both: counted in both.
    await expectDecision(await decide(refund(100), tok), 'allow');
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 100 });
    expect(await counterOf(tok, 'refunds-per-team')).toMatchObject({ counted: 5000 });
    const month = await counterOf(tok, 'refunds-per-team');
    expect(month.window_start).toMatch(/-01T00:00:00\.000Z$/);
  });

  it('amounts are exact decimals: ten refunds of 0.1 reach 1 exactly, not 0.9999999999999999', async () => {
    const tok = caller(unique('agent'), { team: unique('team') });
    for (let i = 0; i < 10; i++) await expectDecision(await decide(refund(0.1), tok), 'allow');
    expect((await budgets(tok)).body).toMatch(/"counted":1,/);
    await expectDecision(await decide(refund(999), tok), 'allow');
    // 1000 now: 0.1 more crosses.
    await expectDecision(await decide(refund(0.1), tok), 'require_approval', 'refunds-per-user');
  });

  it('undecidable is exceeding: no team for a team budget, no run id for a run budget, an amount that is not a non-negative number', async () => {
    const noTeam = token({ sub: unique('agent'), team: undefined, agent: 'bot' });
    const r = await expectDecision(await decide(refund(1), noTeam), 'deny', 'refunds-per-team');
    expect(r.reason).toMatch(/the caller's token has no team/);
    const tok = caller(unique('agent'), {});
    await expectDecision(await decide({ tool: 'payout', args: { amount: 1 } }, tok), 'abort', 'payouts-per-run');
    const text = await expectDecision(
      await decide({ tool: 'payout', args: { amount: '5' }, run: { id: 'r1' } }, tok),
      'abort',
      'payouts-per-run',
    );
    expect(text.reason).toMatch(/does not carry as a non-negative number/);
    await expectDecision(await decide({ tool: 'payout', args: { amount: -5 }, run: { id: 'r1' } }, tok), 'abort');
    // None of these counted.
    expect(await counterOf(tok, 'refunds-per-team')).toMatchObject({ counted: 0 });
  });
});

describe('other windows and scopes', () => {
  it('scope run, per 1h, on_exceed abort: each run of each caller has its own counter', async () => {
    const sub = unique('agent');
    const tok = caller(sub, {});
    const payout = (amount: number, run: string) => ({ tool: 'payout', args: { amount }, run: { id: run } });
    await expectDecision(await decide(payout(300, 'run-a'), tok), 'allow');
    const ended = await expectDecision(await decide(payout(1, 'run-a'), tok), 'abort', 'payouts-per-run');
    expect(ended.message).toMatch(/Stop the run now/);
    await expectDecision(await decide(payout(300, 'run-b'), tok), 'allow');
    // Another caller's run of the same id is another counter.
    await expectDecision(await decide(payout(300, 'run-a'), caller(unique('other'), {})), 'allow');
    const res = await budgets(tok);
    const limit = (res.json() as Body).limits.find((l: Body) => l.id === 'payouts-per-run');
    expect(limit.counters.map((c: Body) => [c.for, c.counted])).toEqual([
      [{ user: sub, run: 'run-a' }, 300],
      [{ user: sub, run: 'run-b' }, 300],
    ]);
    const span = Date.parse(limit.counters[0].window_end) - Date.parse(limit.counters[0].window_start);
    expect(span).toBe(3_600_000);
    expect(Date.parse(limit.counters[0].window_start) % 3_600_000).toBe(0); // fixed windows from the epoch
  });

  it('no sum: each call counts 1; per week, scope agent, on_exceed absent is deny', async () => {
    const agent = unique('agent');
    const tok = token({ sub: unique('u'), team: 'support', agent });
    const other = token({ sub: unique('u'), team: 'support', agent });
    for (let i = 0; i < 25; i++) await expectDecision(await decide({ tool: 'lookup_order' }, tok), 'allow');
    for (let i = 0; i < 25; i++) await expectDecision(await decide({ tool: 'lookup_customer' }, other), 'allow');
    const refused = await expectDecision(await decide({ tool: 'lookup_order' }, tok), 'deny', 'lookups-per-agent');
    expect(refused.reason).toBe(
      'budget "lookups-per-agent" allows 50 calls per week (UTC) per agent, 50 counted in this window: this call would cross it',
    );
    const week = await counterOf(other, 'lookups-per-agent');
    expect(week).toMatchObject({ counted: 50, for: { agent } });
    expect(new Date(week.window_start).getUTCDay()).toBe(1); // ISO weeks start on Monday
  });

  it('scope global: one counter for everyone it selects (teams: [sales], per 86400)', async () => {
    const a = caller(unique('a'), { team: 'sales' });
    const b = caller(unique('b'), { team: 'sales' });
    await expectDecision(await decide(refund(600), a), 'allow');
    await expectDecision(await decide(refund(400), b), 'allow');
    const counter = await counterOf(a, 'everyone-money');
    expect(counter).toMatchObject({ counted: 1000, for: {} });
    // Support is not selected: GET /budgets does not list it for them.
    const support = (await budgets(caller(unique('s'), {}))).json() as Body;
    expect(support.limits.map((l: Body) => l.id)).not.toContain('everyone-money');
  });
});

describe('max_usd: spend reported to POST /usage', () => {
  it('is refused once the reported spend reaches the budget; a report is idempotent by its key', async () => {
    const sub = unique('agent');
    const tok = caller(sub, { roles: [USAGE_ROLE] });
    await expectDecision(await decide({ tool: 'llm' }, tok), 'allow', 'model');
    const key = randomUUID();
    const first = await usage({ tool: 'llm', usd: 15.25 }, tok, key);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({
      usd: 15.25,
      recorded: [{ id: 'model-spend', policy: 'budgets', counted: 15.25, max_usd: 20, reached: false }],
    });
    // The same report again (a lost answer): the kept answer, nothing added.
    const retry = await usage({ tool: 'llm', usd: 15.25 }, tok, key);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
    expect(await counterOf(tok, 'model-spend')).toMatchObject({ counted: 15.25 });
    // The same key with another body is refused.
    expectProblemJson(await usage({ tool: 'llm', usd: 1 }, tok, key), 422, 'idempotency_key_reused');
    await expectDecision(await decide({ tool: 'llm' }, tok), 'allow');
    const reached = await usage({ tool: 'llm', usd: 4.75 }, tok);
    expect(reached.json()).toMatchObject({ recorded: [{ counted: 20, reached: true }] });
    const refused = await expectDecision(await decide({ tool: 'llm' }, tok), 'deny', 'model-spend');
    expect(refused.reason).toBe(
      'budget "model-spend" allows 20 USD of reported spend per day (UTC) per user, and 20 USD is reported in this window',
    );
    // Spend already made is still recorded past the budget.
    expect((await usage({ tool: 'llm', usd: 3 }, tok)).json()).toMatchObject({
      recorded: [{ counted: 23, reached: true }],
    });
    // Reading the budget counted no call.
    expect(await counterOf(tok, 'model-spend')).toMatchObject({ counted: 23 });
  });

  it('refuses a report without a key, a negative or inexact amount, and spend it cannot attribute; reports for unbudgeted tools record nothing', async () => {
    const tok = caller(unique('agent'), { roles: [USAGE_ROLE] });
    expectProblemJson(await usage({ tool: 'llm', usd: 1 }, tok, null), 400, 'bad_request');
    expectProblemJson(await usage({ tool: 'llm', usd: -1 }, tok), 422, 'invalid_body');
    const inexact = await t.app.inject({
      method: 'POST',
      url: '/usage',
      headers: { ...bearer(tok), 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      payload: '{"tool":"llm","usd":0.1000000000000000055511151231257827}',
    });
    expect(expectProblemJson(inexact, 422, 'invalid_body').errors).toEqual([
      { pointer: '/usd', message: 'must have at most 12 digits after the decimal point' },
    ]);
    expectProblemJson(await usage({ tool: 'llm', usd: 1, user: 'someone-else' }, tok), 422, 'identity_in_body');
    const none = await usage({ tool: 'send_email', usd: 1 }, tok);
    expect(none.json()).toEqual({ recorded: [], usd: 1 });
  });
});

describe('rate limits: never more than `calls` allowed in any window of `per` seconds', () => {
  it('calls: 10, per: 60, scope user: the 11th in the minute is denied, saying when a call frees', async () => {
    const tok = caller(unique('agent'));
    for (let i = 0; i < 10; i++) await expectDecision(await decide({ tool: 'send_email' }, tok), 'allow');
    const refused = await expectDecision(await decide({ tool: 'send_email' }, tok), 'deny', 'email-rate');
    expect(refused.reason).toBe(
      'rate limit "email-rate" allows 10 calls in any 60 s per user, and 10 were allowed in the last 60 s',
    );
    const counter = await counterOf(tok, 'email-rate');
    expect(counter).toMatchObject({ calls: 10 });
    expect(Date.parse(counter.frees_at) - Date.parse(counter.window_end)).toBeGreaterThan(0);
    // Others have their own.
    await expectDecision(await decide({ tool: 'send_email' }, caller(unique('other'))), 'allow');
  });

  it('tools: [llm], on_exceed require_approval; the grant counts the call', async () => {
    const agent = unique('bot');
    const tok = token({ sub: unique('u'), agent });
    for (let i = 0; i < 100; i++) await expectDecision(await decide({ tool: 'llm', args: { n: i } }, tok), 'allow');
    const asked = await expectDecision(
      await decide({ tool: 'llm', args: { n: 100 } }, tok),
      'require_approval',
      'model-rate',
    );
    expect(asked.approval.requirements[0]).toMatchObject({
      kind: 'rate_limit',
      presentation: { rate_limit: 'model-rate', calls: 100, per: '1m', scope: 'agent' },
    });
    expect(asked.approval.requirements[0].standing).toMatchObject({ calls: 100 });
    const filed = (await post(t.app, '/approvals', { tool: 'llm', args: { n: 100 } }, tok)).json() as Body;
    await post(t.app, `/approvals/${filed.id}/grant`, {}, approverToken());
    await expectDecision(await decide({ tool: 'llm', args: { n: 100 }, approval_id: filed.id }, tok), 'allow');
    // 101 calls in the last minute now: the grant counted its call past the limit.
    expect(await counterOf(tok, 'model-rate')).toMatchObject({ calls: 100 }); // the counter keeps the last 100 times
  });

  it('the window slides: a full limit frees as its oldest call leaves the window', async () => {
    const dir = await policyDir({
      'r.yaml': 'policy: r\ndefault: allow\nrate_limits:\n  - {id: two, calls: 2, per: 2, scope: user}\n',
    });
    const app = await createTestApp({ policyDir: dir, env: null, database: t.db! });
    try {
      const tok = caller(unique('agent'));
      await expectDecision(await decide({ tool: 'x' }, tok, app), 'allow');
      await new Promise((r) => setTimeout(r, 1100));
      await expectDecision(await decide({ tool: 'x' }, tok, app), 'allow');
      await expectDecision(await decide({ tool: 'x' }, tok, app), 'deny', 'two');
      // The first call leaves the window about 2 s after it was made: one call frees, not two.
      await eventually('the first call to leave the window', 5_000, async () =>
        (await decide({ tool: 'x' }, tok, app)).statusCode === 200 ? true : undefined,
      );
      await expectDecision(await decide({ tool: 'x' }, tok, app), 'deny', 'two');
    } finally {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /budgets and /explain', () => {
  it("a caller sees its own standing in what applies to it; an admin sees everyone's", async () => {
    const sub = unique('agent');
    const tok = caller(sub, {});
    await expectDecision(await decide(refund(10), tok), 'allow');
    const mine = (await budgets(tok)).json() as Body;
    expect(mine.env).toBeNull();
    expect(mine.limits.map((l: Body) => l.id)).toEqual([
      'refunds-per-user',
      'refunds-per-team',
      'payouts-per-run',
      'lookups-per-agent',
      'model-spend',
      'email-rate',
      'model-rate',
    ]);
    const perUser = mine.limits[0];
    expect(perUser).toEqual({
      id: 'refunds-per-user',
      type: 'budget',
      policy: 'budgets',
      scope: 'user',
      on_exceed: 'require_approval',
      counts: 'sum',
      sum: 'amount',
      max: 1000,
      per: 'day',
      tools: ['refund'],
      counters: [{ for: { user: sub }, counted: 10, window_start: expect.any(String), window_end: expect.any(String) }],
    });
    expect(mine.limits.find((l: Body) => l.id === 'email-rate')).toMatchObject({
      type: 'rate_limit',
      calls: 10,
      per: 60,
      counters: [{ calls: 0 }],
    });
    // Never the teams, users or agents a limit selects.
    expect(JSON.stringify(mine)).not.toContain('sales');
    // A caller without a team: the team budget applies, and cannot count it.
    const noTeam = (await budgets(token({ sub: unique('x'), team: undefined }))).json() as Body;
    expect(noTeam.limits.find((l: Body) => l.id === 'refunds-per-team')).toMatchObject({
      counters: [],
      countable: false,
    });

    const all = (await budgets(adminToken())).json() as Body;
    expect(all.limits.map((l: Body) => l.id)).toContain('everyone-money');
    const users = all.limits.find((l: Body) => l.id === 'refunds-per-user');
    expect(users.counters.some((c: Body) => c.for.user === sub && c.counted === 10)).toBe(true);
    expect(users.more).toBe(true === users.counters.length > 100);
    const few = (
      await t.app.inject({ method: 'GET', url: '/budgets?limit=1', headers: bearer(adminToken()) })
    ).json() as Body;
    expect(few.limits.find((l: Body) => l.id === 'refunds-per-user')).toMatchObject({ more: true });
    expect(few.limits.find((l: Body) => l.id === 'refunds-per-user').counters).toHaveLength(1);
    expectProblemJson(
      await t.app.inject({ method: 'GET', url: '/budgets?limit=0', headers: bearer(adminToken()) }),
      400,
      'invalid_query',
    );
  });

  it('/explain answers as /decide would now, shows the counters it read, and counts nothing', async () => {
    const sub = unique('agent');
    const tok = caller(sub, {});
    const reader = readerToken({ sub, team: 'support' });
    await expectDecision(await decide(refund(800), tok), 'allow');
    const res = await post(t.app, '/explain', refund(300), reader);
    expect(res.statusCode, res.body).toBe(403);
    const body = res.json() as Body;
    expect(body).toMatchObject({ decision: 'require_approval', rule: 'refunds-per-user' });
    const [perUser, perTeam] = body.trace.limits;
    expect(perUser).toMatchObject({
      id: 'refunds-per-user',
      selected: true,
      counter: { counted: 800, would_cross: true },
    });
    expect(perTeam).toMatchObject({ id: 'refunds-per-team', selected: true, counter: { would_cross: false } });
    expect(JSON.stringify(body.trace.limits)).not.toContain(sub);
    const fits = await post(t.app, '/explain', refund(200), reader);
    expect(fits.statusCode).toBe(200);
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 800 });
  });
});

describe('POST /approvals and Idempotency-Key on a counted call', () => {
  it('POST /approvals of a call found within its budgets counts it and answers 409 allow: never an uncounted allow', async () => {
    const tok = caller(unique('agent'), {});
    const res = await post(t.app, '/approvals', refund(400), tok);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({ decision: 'allow', rule: 'refunds' });
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 400 });
    // Refused by one of two counters, it counts in neither (rolled back) and files the approval.
    await expectDecision(await decide(refund(600), tok), 'allow');
    const filed = await post(t.app, '/approvals', refund(10), tok);
    expect(filed.statusCode, filed.body).toBe(201);
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 1000 });
  });

  it('a counted /decide retried with the same Idempotency-Key is answered once and counted once', async () => {
    const tok = caller(unique('agent'), {});
    const send = (key: string) =>
      t.app.inject({
        method: 'POST',
        url: '/decide',
        headers: { ...bearer(tok), 'content-type': 'application/json', 'idempotency-key': key },
        payload: JSON.stringify(refund(300, 'K1')),
      });
    const key = randomUUID();
    const first = await send(key);
    const second = await send(key);
    expect(first.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toBe(first.body);
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 300 });
    expect((await send(randomUUID())).statusCode).toBe(200);
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 600 });
  });
});

describe('without a database', () => {
  it('a call budgets or rate limits select is 503 (fail closed); every other call is answered as always', async () => {
    const app = await createTestApp({ policyDir: POLICIES, env: null });
    try {
      const tok = caller(unique('agent'), {});
      const res = await decide(refund(1), tok, app);
      expectProblemJson(res, 503, 'unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      // Denied by a rule: no counter involved, no database needed.
      await expectDecision(await decide({ tool: 'wipe_orders' }, tok, app), 'deny', 'no-wipe');
      expectProblemJson(await budgets(tok, app), 503, 'unavailable');
      expectProblemJson(
        await usage({ tool: 'llm', usd: 1 }, caller(unique('agent'), { roles: [USAGE_ROLE] }), randomUUID(), app),
        503,
        'unavailable',
      );
      expectProblemJson(await post(app.app, '/explain', refund(1), readerToken()), 503, 'unavailable');
    } finally {
      await app.close();
    }
    // A policy set without any limit needs none for /decide or GET /budgets.
    const plain = await createTestApp({ env: 'prod' });
    try {
      await expectDecision(await decide({ tool: 'lookup_order', args: { order: 'A1' } }, token(), plain), 'allow');
      const none = await budgets(token(), plain);
      expect(none.statusCode).toBe(200);
      expect(none.json()).toEqual({ env: 'prod', limits: [] });
    } finally {
      await plain.close();
    }
  });
});

describe('a policy set without budgets or rate limits', () => {
  it('never reaches the counters or the database on /decide, with a database configured', async () => {
    const app = await createTestApp({ env: 'prod', database: true });
    try {
      const limits = app.ctx.limits!;
      const spies = [
        vi.spyOn(limits, 'transaction'),
        vi.spyOn(limits, 'countOne'),
        vi.spyOn(app.db!.sql, 'begin'),
        vi.spyOn(app.ctx.keys!, 'once'),
      ];
      await expectDecision(await decide({ tool: 'lookup_order', args: { order: 'A1' } }, token(), app), 'allow');
      await expectDecision(
        await decide({ tool: 'refund', args: { order: 'A1', amount: 120 } }, token(), app),
        'require_approval',
      );
      await expectDecision(await decide({ tool: 'wipe_orders' }, token(), app), 'abort');
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      await app.close();
    }
  });
});

describe('the sweep', () => {
  it('deletes counters of ended windows and rate limits with nothing in their window; current ones stay', async () => {
    const sql = t.db!.sql;
    await sql`insert into budget_counters (budget, scope_key, window_start, window_end, counted, calls)
              values ('old', 'user:x', now() - interval '2 days', now() - interval '1 day', 5, 1)`;
    await sql`insert into rate_limit_calls (rate_limit, scope_key, times, expires_at)
              values ('old', 'user:x', array[now() - interval '2 minutes'], now() - interval '1 minute')`;
    const tok = caller(unique('agent'), {});
    await expectDecision(await decide(refund(1), tok), 'allow');
    await expectDecision(await decide({ tool: 'send_email' }, tok), 'allow');
    const limits = t.ctx.limits!;
    expect(await limits.transaction((tx) => limits.store.sweep(tx))).toBeGreaterThanOrEqual(2);
    const [old] = await sql<{ n: number }[]>`
      select (select count(*) from budget_counters where budget = 'old')::int + (select count(*) from rate_limit_calls where rate_limit = 'old')::int as n`;
    expect(old!.n).toBe(0);
    expect(await counterOf(tok, 'refunds-per-user')).toMatchObject({ counted: 1 });
    expect(await counterOf(tok, 'email-rate')).toMatchObject({ calls: 1 });
  });
});
