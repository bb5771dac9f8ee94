// Idempotency-Key attacks (docs/spec.md section 5.3), through the real server and PostgreSQL: a kept
// answer is never an authorization by itself. Every retry is decided again for its own token first;
// what the key kept answers it only for the identical identity (every claim but the token's times and
// id), and only while the policy still stands behind it. Also: what a key keeps (references, not
// bodies) and the per-caller caps.
import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverToken, bearer, createTestApp, token, type TestApp } from '../helpers/app.js';
import { expectProblemJson } from '../helpers/http.js';
import { policyDir } from '../helpers/process.js';

// Refunds: the support team's, an operator's approval over 100; nobody else's. Charges: the support
// team's, counted per user, an operator's approval past 1,000 a day. Spend on `llm` reported per team.
const POLICY = `
policy: keyed
default: deny
tools:
  refund:
    kind: remote_mutation
    schema:
      type: object
      required: [order, amount]
      additionalProperties: false
      properties:
        order: {type: string}
        amount: {type: number, minimum: 0}
        note: {type: string}
  charge: {kind: remote_mutation}
rules:
  - id: refund-support
    tools: [refund]
    teams: [support]
    allow: true
    confirm: "amount > 100"
    reason: refund over 100 needs an operator
    approval: {kind: refund_over_cap, capability: [order, amount], presentation: [order, amount, note]}
  - {id: charge-support, tools: [charge], teams: [support], allow: true}
  - {id: model, tools: [llm], allow: true}
budgets:
  - {id: charges-per-user, tools: charge, sum: amount, max: 1000, per: day, scope: user, on_exceed: require_approval}
  - {id: model-spend, tools: llm, max_usd: 50, per: day, scope: team}
`;

let dir: string;
let t: TestApp;
beforeAll(async () => {
  dir = await policyDir({ 'keyed.yaml': POLICY });
  t = await createTestApp({ policyDir: dir, env: null, database: true });
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

const unique = (label: string): string => `${label}-${randomUUID().slice(0, 8)}`;
/** A token of `sub`: team support unless said otherwise. */
const as = (sub: string, claims: Record<string, unknown> = {}): string =>
  token({ sub, team: 'support', agent: 'bot', roles: ['usage_reporter'], ...claims });

function send(url: string, body: unknown, tok: string, key?: string, app = t): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...bearer(tok), 'content-type': 'application/json' };
  if (key !== undefined) headers['idempotency-key'] = key;
  return app.app.inject({ method: 'POST', url, headers, payload: JSON.stringify(body) });
}

async function granted(
  sub: string,
  note = 'asked twice',
  app = t,
): Promise<{ id: string; call: { tool: string; args: Record<string, unknown> } }> {
  const call = { tool: 'refund', args: { order: unique('O'), amount: 120, note } };
  const filed = await send('/approvals', call, as(sub), undefined, app);
  expect(filed.statusCode, filed.body).toBe(201);
  const { id } = filed.json() as { id: string };
  expect((await send(`/approvals/${id}/grant`, {}, approverToken(), undefined, app)).statusCode).toBe(200);
  return { id, call };
}

async function consumed(id: string): Promise<number> {
  const [row] = await t.db!.sql<{ n: number }[]>`
    select count(*)::int as n from approval_events where approval_id = ${id} and to_status = 'consumed'`;
  return row!.n;
}

async function counted(sub: string): Promise<string | null> {
  const [row] = await t.db!.sql<{ counted: string }[]>`
    select counted::text from budget_counters where budget = 'charges-per-user' and scope_key = ${`user:${sub}`}`;
  return row?.counted ?? null;
}

describe('a redeem retried under its key', () => {
  it('the attack: a token of the same sub from a team the policy denies gets the deny, never the kept allow', async () => {
    const sub = unique('agent');
    const { id, call } = await granted(sub);
    const key = randomUUID();
    const first = await send('/decide', { ...call, approval_id: id }, as(sub), key);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
    for (const team of ['sales', undefined]) {
      const other = await send('/decide', { ...call, approval_id: id }, as(sub, { team }), key);
      expect(other.statusCode, other.body).toBe(403);
      expect(other.json()).toMatchObject({ decision: 'deny', rule: 'keyed#default' });
      expect(other.headers['idempotent-replayed']).toBeUndefined();
    }
    // The identical identity is still answered from the key; the grant was consumed once.
    const retry = await send('/decide', { ...call, approval_id: id }, as(sub), key);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
    expect(await consumed(id)).toBe(1);
  });

  it('another identity of the same sub that the policy still sends to the approval is 422: any claim counts', async () => {
    const sub = unique('agent');
    const { id, call } = await granted(sub);
    const key = randomUUID();
    expect((await send('/decide', { ...call, approval_id: id }, as(sub), key)).statusCode).toBe(200);
    for (const claims of [
      { roles: ['approver'] },
      { agent: 'other-bot' },
      { tenant: 'acme' },
      { auth_time: 1 },
      { aud: 'elsewhere' },
    ]) {
      const res = await send('/decide', { ...call, approval_id: id }, as(sub, claims), key);
      expect(expectProblemJson(res, 422, 'idempotency_key_reused').detail, JSON.stringify(claims)).toMatch(
        /another identity/,
      );
    }
    expect(await consumed(id)).toBe(1);
  });

  it('a refreshed token of the same identity (other iat, exp, jti) is answered from the key', async () => {
    const sub = unique('agent');
    const { id, call } = await granted(sub);
    const key = randomUUID();
    const first = await send('/decide', { ...call, approval_id: id }, as(sub, { jti: 'one' }), key);
    const now = Math.floor(Date.now() / 1000);
    const refreshed = as(sub, { jti: 'two', iat: now - 5, nbf: now - 5, exp: now + 7200 });
    const retry = await send('/decide', { ...call, approval_id: id }, refreshed, key);
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
  });

  it('a retry never outlives the grant: past the time it could be redeemed in, it is decided afresh', async () => {
    const sub = unique('agent');
    const { id, call } = await granted(sub);
    const key = randomUUID();
    expect((await send('/decide', { ...call, approval_id: id }, as(sub), key)).statusCode).toBe(200);
    await t.db!.sql`update approvals set expires_at = now() - interval '1 second' where id = ${id}`;
    const late = await send('/decide', { ...call, approval_id: id }, as(sub), key);
    expect(late.statusCode).toBe(403);
    expect(late.headers['idempotent-replayed']).toBeUndefined();
    expect(late.json()).toMatchObject({
      decision: 'require_approval',
      approval: { id, status: 'consumed' },
      next: { action: 'file_new' },
    });
    expect(await consumed(id)).toBe(1);
  });

  it('once the policy no longer allows the call, the retry is denied; once it asks for another approval, the spent grant is not replayed', async () => {
    const sub = unique('agent');
    const a = await granted(sub);
    const b = await granted(sub);
    const [ka, kb] = [randomUUID(), randomUUID()];
    expect((await send('/decide', { ...a.call, approval_id: a.id }, as(sub), ka)).statusCode).toBe(200);
    expect((await send('/decide', { ...b.call, approval_id: b.id }, as(sub), kb)).statusCode).toBe(200);
    try {
      await writeFile(
        join(dir, 'keyed.yaml'),
        POLICY.replace(
          'teams: [support]\n    allow: true\n    confirm',
          'teams: [nobody]\n    allow: true\n    confirm',
        ),
      );
      expect(await t.ctx.policies.reload()).toEqual({ ok: true });
      const denied = await send('/decide', { ...a.call, approval_id: a.id }, as(sub), ka);
      expect(denied.json()).toMatchObject({ decision: 'deny' });
      // The operator now sees the order only: a grant of what was shown before answers nothing.
      await writeFile(
        join(dir, 'keyed.yaml'),
        POLICY.replace('presentation: [order, amount, note]', 'presentation: [order]'),
      );
      expect(await t.ctx.policies.reload()).toEqual({ ok: true });
      const asks = await send('/decide', { ...b.call, approval_id: b.id }, as(sub), kb);
      expect(asks.statusCode).toBe(403);
      expect(asks.headers['idempotent-replayed']).toBeUndefined();
      expect(asks.json()).toMatchObject({ decision: 'require_approval', next: { action: 'file_new' } });
    } finally {
      await writeFile(join(dir, 'keyed.yaml'), POLICY);
      expect(await t.ctx.policies.reload()).toEqual({ ok: true });
    }
    // The policy as it was: the identical retry gets the same allow again.
    expect((await send('/decide', { ...b.call, approval_id: b.id }, as(sub), kb)).headers['idempotent-replayed']).toBe(
      'true',
    );
    expect([await consumed(a.id), await consumed(b.id)]).toEqual([1, 1]);
  });
});

describe('a counted call retried under its key', () => {
  const charge = (amount: number) => ({ tool: 'charge', args: { amount } });

  it('a denied team gets the deny; the identical identity gets the kept allow, counted once', async () => {
    const sub = unique('agent');
    const key = randomUUID();
    const first = await send('/decide', charge(300), as(sub), key);
    expect(first.statusCode, first.body).toBe(200);
    const other = await send('/decide', charge(300), as(sub, { team: 'sales' }), key);
    expect(other.json()).toMatchObject({ decision: 'deny' });
    const retry = await send('/decide', charge(300), as(sub), key);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
    expect(await counted(sub)).toBe('300');
    // Another role of the same sub is another identity.
    expectProblemJson(
      await send('/decide', charge(300), as(sub, { roles: ['x'] }), key),
      422,
      'idempotency_key_reused',
    );
    expect(await counted(sub)).toBe('300');
  });

  it('a grant redeemed past the budget is replayed to the identical identity only, counted once', async () => {
    const sub = unique('agent');
    expect((await send('/decide', charge(1000), as(sub))).statusCode).toBe(200);
    const asks = await send('/decide', charge(50), as(sub));
    expect(asks.json()).toMatchObject({ decision: 'require_approval', rule: 'charges-per-user' });
    const filed = await send('/approvals', charge(50), as(sub));
    expect(filed.statusCode, filed.body).toBe(201);
    const { id } = filed.json() as { id: string };
    await send(`/approvals/${id}/grant`, {}, approverToken());
    const key = randomUUID();
    const first = await send('/decide', { ...charge(50), approval_id: id }, as(sub), key);
    expect(first.json()).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
    expect(
      (await send('/decide', { ...charge(50), approval_id: id }, as(sub, { team: 'sales' }), key)).json(),
    ).toMatchObject({ decision: 'deny' });
    const retry = await send('/decide', { ...charge(50), approval_id: id }, as(sub), key);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toMatchObject({
      decision: 'allow',
      rule: 'charges-per-user',
      decision_id: first.json().decision_id,
      approval: { id, status: 'consumed' },
    });
    expect(await counted(sub)).toBe('1050');
    expect(await consumed(id)).toBe(1);
  });
});

describe('filing and usage under a key', () => {
  it('a filing retried by a denied team gets the 409 deny, not the approval', async () => {
    const sub = unique('agent');
    const key = randomUUID();
    const call = { tool: 'refund', args: { order: unique('O'), amount: 500 } };
    const first = await send('/approvals', call, as(sub), key);
    expect(first.statusCode).toBe(201);
    const other = await send('/approvals', call, as(sub, { team: 'sales' }), key);
    expect(other.statusCode).toBe(409);
    expect(other.json()).toMatchObject({ decision: 'deny' });
    const retry = await send('/approvals', call, as(sub), key);
    expect(retry.statusCode).toBe(201);
    expect(retry.body).toBe(first.body);
  });

  it('a usage report retried by another identity of the same sub is 422: its spend would count elsewhere', async () => {
    const sub = unique('agent');
    const key = randomUUID();
    expect((await send('/usage', { tool: 'llm', usd: 5 }, as(sub), key)).statusCode).toBe(200);
    expectProblemJson(
      await send('/usage', { tool: 'llm', usd: 5 }, as(sub, { team: 'sales' }), key),
      422,
      'idempotency_key_reused',
    );
    expect((await send('/usage', { tool: 'llm', usd: 5 }, as(sub), key)).headers['idempotent-replayed']).toBe('true');
  });
});

describe('what a key keeps', () => {
  it('twenty keys on one 60 KB approval keep references: small rows, and the answers are whole', async () => {
    const sub = unique('agent');
    const note = 'n'.repeat(60_000);
    const call = { tool: 'refund', args: { order: unique('O'), amount: 120, note } };
    const keys = Array.from({ length: 20 }, () => randomUUID());
    const filings: LightMyRequestResponse[] = [];
    for (const key of keys.slice(0, 10)) filings.push(await send('/approvals', call, as(sub), key));
    expect(filings.map((f) => f.statusCode)).toEqual([201, ...Array(9).fill(200)]);
    const { id } = filings[0]!.json() as { id: string };
    await send(`/approvals/${id}/grant`, {}, approverToken());
    const redeems: LightMyRequestResponse[] = [];
    for (const key of keys.slice(10)) redeems.push(await send('/decide', { ...call, approval_id: id }, as(sub), key));
    expect(redeems[0]!.statusCode).toBe(200);
    expect(redeems.slice(1).map((r) => r.json().decision)).toEqual(Array(9).fill('require_approval'));
    const [stored] = await t.db!.sql<{ rows: number; bytes: number; bodies: number }[]>`
      select count(*)::int as rows, sum(pg_column_size(k.*))::int as bytes, count(response)::int as bodies
        from idempotency_keys k where sub = ${sub}`;
    // Ten filings and one redeem changed something; the nine refused redeems changed nothing.
    expect(stored).toMatchObject({ rows: 11, bodies: 0 });
    expect(stored!.bytes).toBeLessThan(11 * 400);
    // The retries are answered whole, rebuilt from the approval.
    const again = await send('/approvals', call, as(sub), keys[0]);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toMatchObject({ id, status: 'consumed', args: { note } });
    const redeemAgain = await send('/decide', { ...call, approval_id: id }, as(sub), keys[10]);
    expect(redeemAgain.body).toBe(redeems[0]!.body);
    expect(redeemAgain.body.length).toBeGreaterThan(120_000);
  });

  it('one caller keeps at most IDEMPOTENCY_MAX_KEYS keys: beyond, 429 with Retry-After, and nothing is done', async () => {
    const capped = await createTestApp({
      policyDir: dir,
      env: null,
      database: t.db!,
      keyCaps: { maxKeys: 2, maxBytes: 1_048_576 },
    });
    try {
      const sub = unique('agent');
      const a = await granted(sub, 'a', capped);
      const b = await granted(sub, 'b', capped);
      const c = await granted(sub, 'c', capped);
      const [ka, kb, kc] = [randomUUID(), randomUUID(), randomUUID()];
      expect((await send('/decide', { ...a.call, approval_id: a.id }, as(sub), ka, capped)).statusCode).toBe(200);
      expect((await send('/decide', { ...b.call, approval_id: b.id }, as(sub), kb, capped)).statusCode).toBe(200);
      const over = await send('/decide', { ...c.call, approval_id: c.id }, as(sub), kc, capped);
      expect(expectProblemJson(over, 429, 'too_many_idempotency_keys').detail).toMatch(/IDEMPOTENCY_MAX_KEYS/);
      const retryAfter = Number(over.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(86_000);
      expect(retryAfter).toBeLessThanOrEqual(86_400);
      expect(await consumed(c.id)).toBe(0);
      // Kept keys still answer; another caller is not affected; without a key the grant is redeemed.
      expect(
        (await send('/decide', { ...a.call, approval_id: a.id }, as(sub), ka, capped)).headers['idempotent-replayed'],
      ).toBe('true');
      expect((await send('/decide', { ...c.call, approval_id: c.id }, as(sub), undefined, capped)).statusCode).toBe(
        200,
      );
      const other = unique('agent');
      const d = await granted(other, 'd', capped);
      expect((await send('/decide', { ...d.call, approval_id: d.id }, as(other), kc, capped)).statusCode).toBe(200);
      expect(await consumed(c.id)).toBe(1);
      // A key past its 24 hours frees its place.
      const e = await granted(sub, 'e', capped);
      expectProblemJson(
        await send('/decide', { ...e.call, approval_id: e.id }, as(sub), kc, capped),
        429,
        'too_many_idempotency_keys',
      );
      await t.db!
        .sql`update idempotency_keys set created_at = now() - interval '25 hours' where sub = ${sub} and key = ${ka}`;
      expect((await send('/decide', { ...e.call, approval_id: e.id }, as(sub), kc, capped)).statusCode).toBe(200);
    } finally {
      await capped.close();
    }
  });

  it('one caller keeps at most IDEMPOTENCY_MAX_BYTES of keys and kept answers: beyond, 429', async () => {
    const capped = await createTestApp({
      policyDir: dir,
      env: null,
      database: t.db!,
      keyCaps: { maxKeys: 100, maxBytes: 1024 },
    });
    try {
      const sub = unique('agent');
      const team = unique('team');
      const long = (c: string): string => c.repeat(250);
      const answers: number[] = [];
      // A usage answer is kept as its text: bytes of its key and of its body.
      for (const c of 'abcdef')
        answers.push((await send('/usage', { tool: 'llm', usd: 1 }, as(sub, { team }), long(c), capped)).statusCode);
      const [row] = await t.db!.sql<{ bytes: number }[]>`
        select sum(octet_length(key) + octet_length(response))::int as bytes from idempotency_keys where sub = ${sub}`;
      const first429 = answers.indexOf(429);
      expect(first429).toBeGreaterThan(0);
      expect(answers.slice(first429).every((s) => s === 429)).toBe(true);
      expect(row!.bytes).toBeLessThanOrEqual(1024);
      // A refused report recorded nothing.
      const [spent] = await t.db!.sql<{ counted: string }[]>`
        select counted::text from budget_counters where budget = 'model-spend' and scope_key = ${`team:${team}`}`;
      expect(spent?.counted).toBe(String(first429));
    } finally {
      await capped.close();
    }
  });
});
