// Records that cannot be lost (docs/spec.md section 5.10): with DECISION_STORE=postgres, a decision
// that writes to PostgreSQL (a filing, a redeem, a call counted by budgets or rate limits) writes its
// record in that same transaction, so the row is there as soon as the answer is (the queue's linger
// is set to a minute here: a row present at once did not come through the queue). A decision whose
// transaction rolled back, or that wrote nothing, has its record queued instead: never both, never
// none.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import type { Sql } from 'postgres';
import { approverToken, bearer, createTestApp, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { policyDir } from '../helpers/process.js';

let db: TestDatabase;
const pools: Sql[] = [];
const apps: TestApp[] = [];
const LOGS: Record<string, unknown>[] = [];
let payments: TestApp;
let budgets: TestApp;

async function app(policyDir: string, env: string | null, store = true, lanes = true): Promise<TestApp> {
  const sql = createSql(db.url, { max: 2 });
  pools.push(sql);
  const t = await createTestApp({
    policyDir,
    env,
    database: db,
    logs: LOGS,
    ...(lanes ? {} : { lanes: false }),
    ...(store ? { decisionStore: { sql, lingerMs: 60_000 } } : {}),
  });
  apps.push(t);
  await t.writer?.flush(); // the partitions checked, as the service does before serving
  return t;
}

beforeAll(async () => {
  db = await createTestDatabase();
  payments = await app('test/cases/payments', 'prod');
  budgets = await app('test/cases/budgets', null);
});
afterAll(async () => {
  for (const t of apps) await t.close();
  for (const sql of pools) await sql.end();
  await db.drop();
});

const agent = (sub: string, team = 'support'): string => token({ sub, team, agent: 'bot' });
const newSub = (): string => `rec-${randomUUID().slice(0, 8)}`;

function send(t: TestApp, url: string, body: unknown, tok: string, key?: string): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...bearer(tok), 'content-type': 'application/json' };
  if (key !== undefined) headers['idempotency-key'] = key;
  return t.app.inject({ method: 'POST', url, headers, payload: JSON.stringify(body) });
}

interface Stored {
  id: string;
  decision: string;
  rule: string;
  kind: string | null;
  approval_id: string | null;
  replayed: boolean;
}
const stored = (where: { id?: string; user?: string }): Promise<Stored[]> =>
  db.sql<Stored[]>`
    select id::text, decision, rule, kind, approval_id, replayed from decisions
     where ${where.id !== undefined ? db.sql`id = ${where.id}` : db.sql`user_sub = ${where.user!}`}
     order by decided_at, id`.then((rows) => [...rows]);

const idOf = (res: LightMyRequestResponse): string => (res.json() as { decision_id: string }).decision_id;

async function granted(sub: string, amount = 120): Promise<{ id: string; body: unknown }> {
  const body = { tool: 'refund', args: { order: `R-${randomUUID().slice(0, 6)}`, amount } };
  const filed = await send(payments, '/approvals', body, agent(sub));
  expect(filed.statusCode, filed.body).toBe(201);
  const { id } = filed.json() as { id: string };
  expect((await send(payments, `/approvals/${id}/grant`, {}, approverToken())).statusCode).toBe(200);
  return { id, body };
}

describe('records written with what the decision did', () => {
  it('a filing: recorded as the decision it made, in the filing transaction', async () => {
    const sub = newSub();
    const queued = payments.writer!.queued;
    const body = { tool: 'refund', args: { order: 'F-1', amount: 150 } };
    const filed = await send(payments, '/approvals', body, agent(sub));
    expect(filed.statusCode).toBe(201);
    expect(await stored({ user: sub })).toEqual([
      expect.objectContaining({ decision: 'require_approval', rule: 'refund-support', kind: 'refund_over_cap' }),
    ]);
    expect(payments.writer!.queued).toBe(queued);
    // Filed again: the same approval found, in a transaction too; a 409 (allowed: nothing filed) is queued.
    expect((await send(payments, '/approvals', body, agent(sub))).statusCode).toBe(200);
    expect(await stored({ user: sub })).toHaveLength(2);
    const allowed = await send(
      payments,
      '/approvals',
      { tool: 'refund', args: { order: 'F-2', amount: 5 } },
      agent(sub),
    );
    expect(allowed.statusCode).toBe(409);
    expect(await stored({ id: idOf(allowed) })).toEqual([]);
    expect(payments.writer!.queued).toBe(queued + 1);
    await payments.writer!.flush();
    expect(await stored({ id: idOf(allowed) })).toEqual([expect.objectContaining({ decision: 'allow' })]);
  });

  it('a redeem: its record is in the store with the answer, a refused redeem too', async () => {
    const sub = newSub();
    const { id, body } = await granted(sub);
    const queued = payments.writer!.queued;
    const redeem = await send(payments, '/decide', { ...(body as object), approval_id: id }, agent(sub));
    expect(redeem.statusCode, redeem.body).toBe(200);
    expect(await stored({ id: idOf(redeem) })).toEqual([
      expect.objectContaining({ decision: 'allow', rule: 'refund-support', approval_id: id, replayed: false }),
    ]);
    // Cited again: consumed already, 403; its transaction wrote nothing, committed, and carried the record.
    const again = await send(payments, '/decide', { ...(body as object), approval_id: id }, agent(sub));
    expect(again.statusCode).toBe(403);
    expect(await stored({ id: idOf(again) })).toEqual([
      expect.objectContaining({ decision: 'require_approval', approval_id: id }),
    ]);
    expect(payments.writer!.queued).toBe(queued);
  });

  it('a redeem with an Idempotency-Key: recorded in the key transaction; the retry answered from the key is queued', async () => {
    const sub = newSub();
    const { id, body } = await granted(sub);
    const queued = payments.writer!.queued;
    const key = randomUUID();
    const first = await send(payments, '/decide', { ...(body as object), approval_id: id }, agent(sub), key);
    expect(first.statusCode).toBe(200);
    expect(await stored({ id: idOf(first) })).toHaveLength(1);
    expect(payments.writer!.queued).toBe(queued);
    const retry = await send(payments, '/decide', { ...(body as object), approval_id: id }, agent(sub), key);
    expect(retry.statusCode).toBe(200);
    expect(idOf(retry)).toBe(idOf(first)); // the answer kept
    expect(payments.writer!.queued).toBe(queued + 1); // its own record: a replay, written nowhere else
    await payments.writer!.flush();
    const rows = await stored({ user: sub });
    expect(rows.filter((r) => r.decision === 'allow' && !r.replayed).map((r) => r.id)).toEqual([idOf(first)]);
    expect(rows.filter((r) => r.replayed)).toHaveLength(1);
  });

  it('a filing with an Idempotency-Key: recorded once, in the key transaction', async () => {
    const sub = newSub();
    const key = randomUUID();
    const body = { tool: 'refund', args: { order: 'K-1', amount: 300 } };
    expect((await send(payments, '/approvals', body, agent(sub), key)).statusCode).toBe(201);
    expect(await stored({ user: sub })).toEqual([expect.objectContaining({ decision: 'require_approval' })]);
    expect((await send(payments, '/approvals', body, agent(sub), key)).statusCode).toBe(201);
    await payments.writer!.flush();
    const rows = await stored({ user: sub });
    expect(rows.map((r) => r.replayed)).toEqual([false, true]);
  });

  it('a call counted on a lane (one counter, several): its record commits with the count', async () => {
    const sub = newSub();
    const queued = budgets.writer!.queued;
    const lookup = await send(budgets, '/decide', { tool: 'lookup_order', args: { id: 1 } }, agent(sub));
    expect(lookup.statusCode, lookup.body).toBe(200);
    expect(await stored({ id: idOf(lookup) })).toEqual([
      expect.objectContaining({ decision: 'allow', rule: 'lookups' }),
    ]);
    const refund = await send(budgets, '/decide', { tool: 'refund', args: { order: 'B-1', amount: 900 } }, agent(sub));
    expect(refund.statusCode, refund.body).toBe(200);
    expect(await stored({ id: idOf(refund) })).toEqual([
      expect.objectContaining({ decision: 'allow', rule: 'refunds' }),
    ]);
    expect(budgets.writer!.queued).toBe(queued);
    // Past the user's 1,000 a day: refused, nothing counted, nothing committed: the record is queued.
    const over = await send(budgets, '/decide', { tool: 'refund', args: { order: 'B-2', amount: 200 } }, agent(sub));
    expect(over.statusCode).toBe(403);
    expect(await stored({ id: idOf(over) })).toEqual([]);
    expect(budgets.writer!.queued).toBe(queued + 1);
    await budgets.writer!.flush();
    expect(await stored({ id: idOf(over) })).toEqual([
      expect.objectContaining({ decision: 'require_approval', rule: 'refunds-per-user' }),
    ]);
  });

  it("calls counted together in one lane transaction: each call's record, once, with the answer", async () => {
    const subs = Array.from({ length: 24 }, newSub);
    const queued = budgets.writer!.queued;
    const answers = await Promise.all(
      subs.map((sub, i) => send(budgets, '/decide', { tool: 'lookup_order', args: { id: i } }, agent(sub))),
    );
    expect(answers.map((a) => a.statusCode)).toEqual(subs.map(() => 200));
    const ids = answers.map(idOf);
    const rows = await db.sql<{ id: string }[]>`select id::text from decisions where id in ${db.sql(ids)}`;
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(budgets.writer!.queued).toBe(queued);
  });

  it('a counted call in a transaction (an Idempotency-Key): recorded in it; rolled back (refused), queued', async () => {
    const sub = newSub();
    const queued = budgets.writer!.queued;
    const call = { tool: 'refund', args: { order: 'T-1', amount: 950 } };
    const first = await send(budgets, '/decide', call, agent(sub), randomUUID());
    expect(first.statusCode).toBe(200);
    expect(await stored({ id: idOf(first) })).toHaveLength(1);
    expect(budgets.writer!.queued).toBe(queued);
    const refused = await send(
      budgets,
      '/decide',
      { ...call, args: { order: 'T-2', amount: 60 } },
      agent(sub),
      randomUUID(),
    );
    expect(refused.statusCode).toBe(403);
    expect(await stored({ id: idOf(refused) })).toEqual([]);
    expect(budgets.writer!.queued).toBe(queued + 1);
    await budgets.writer!.flush();
    expect(await stored({ id: idOf(refused) })).toHaveLength(1);
  });

  it('a counted call in a transaction of the pool (no lanes): recorded in it', async () => {
    const t = await app('test/cases/budgets', null, true, false);
    const sub = newSub();
    const res = await send(t, '/decide', { tool: 'send_email', args: { to: 'a@example.com' } }, agent(sub));
    expect(res.statusCode, res.body).toBe(200);
    expect(await stored({ id: idOf(res) })).toEqual([expect.objectContaining({ decision: 'allow', rule: 'emails' })]);
    expect(t.writer!.queued).toBe(0);
    // A POST /approvals that finds the call allowed counts it: the 409 is recorded with the count.
    const filing = await send(t, '/approvals', { tool: 'send_email', args: { to: 'b@example.com' } }, agent(sub));
    expect(filing.statusCode).toBe(409);
    expect(await stored({ id: idOf(filing) })).toEqual([expect.objectContaining({ decision: 'allow' })]);
    expect(t.writer!.queued).toBe(0);
  });

  it("a crash approval: the runtime's filing is not recorded (it decides nothing); the resume that consumes it is, with it", async () => {
    const dir = await policyDir({
      'recovery.yaml': `
policy: recovery
tools:
  send_email: {kind: remote_mutation}
rules:
  - id: resume-after-crash
    tools: [send_email]
    allow: true
    when: '$approval.kind == "interrupted_side_effect"'
`,
    });
    try {
      const t = await app(dir, null);
      const sub = newSub();
      const runtime = token({ sub, team: 'ops', roles: ['runtime'] });
      const call = { tool: 'send_email', args: { to: 'ops@example.com' } };
      const filed = await send(t, '/approvals', { kind: 'interrupted_side_effect', ...call }, runtime);
      expect(filed.statusCode, filed.body).toBe(201);
      const { id } = filed.json() as { id: string };
      expect((await send(t, `/approvals/${id}/grant`, {}, approverToken())).statusCode).toBe(200);
      const resumed = await send(t, '/decide', { ...call, approval_id: id }, runtime);
      expect(resumed.statusCode, resumed.body).toBe(200);
      // At once, and nothing queued: the filing left no record, the resume's came with its consume.
      expect(await stored({ user: sub })).toEqual([
        expect.objectContaining({ id: idOf(resumed), decision: 'allow', rule: 'resume-after-crash', approval_id: id }),
      ]);
      expect(t.writer!.queued).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a result's review: its filing and its redeem recorded in their transactions, with their stage", async () => {
    const dir = await policyDir({
      'outputs.yaml': `policy: outputs
tools:
  crm_lookup: {kind: read_only}
rules:
  - {id: crm-calls, tools: [crm_lookup], allow: true}
guards:
  - {id: crm-review, guard: pii, tools: [crm_lookup], on: [result], action: require_approval}
`,
    });
    try {
      const outputs = await app(dir, null);
      const sub = newSub();
      const queued = outputs.writer!.queued;
      const body = { stage: 'result', tool: 'crm_lookup', args: { customer: 'C-1' }, result: 'ada@example.com' };
      const filed = await send(outputs, '/approvals', body, agent(sub));
      expect(filed.statusCode, filed.body).toBe(201);
      const { id } = filed.json() as { id: string };
      expect((await send(outputs, `/approvals/${id}/grant`, {}, approverToken())).statusCode).toBe(200);
      const redeem = await send(outputs, '/inspect', { ...body, approval_id: id }, agent(sub));
      expect(redeem.statusCode, redeem.body).toBe(200);
      const rows = await db.sql<
        { decision: string; rule: string; kind: string | null; stage: string; approval_id: string | null }[]
      >`
        select decision, rule, kind, stage, approval_id from decisions where user_sub = ${sub} order by decided_at, id`;
      expect([...rows]).toEqual([
        { decision: 'require_approval', rule: 'crm-review', kind: 'pii', stage: 'result', approval_id: null },
        { decision: 'allow', rule: 'crm-review', kind: 'pii', stage: 'result', approval_id: id },
      ]);
      expect(outputs.writer!.queued).toBe(queued);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a pure decision stays queued; with the store off nothing is written', async () => {
    const sub = newSub();
    const queued = payments.writer!.queued;
    const pure = await send(payments, '/decide', { tool: 'lookup_order', args: { id: 2 } }, agent(sub));
    expect(pure.statusCode).toBe(200);
    expect(await stored({ id: idOf(pure) })).toEqual([]);
    expect(payments.writer!.queued).toBe(queued + 1);
    const off = await app('test/cases/payments', 'prod', false);
    const { id, body } = await granted(sub);
    const redeem = await send(off, '/decide', { ...(body as object), approval_id: id }, agent(sub));
    expect(redeem.statusCode).toBe(200);
    expect(await stored({ id: idOf(redeem) })).toEqual([]);
  });

  it('every record once: no decision id twice in the store, the written count agrees, one log line each', async () => {
    for (const t of apps) await t.writer?.flush();
    const twice = await db.sql`select id from decisions group by id having count(*) > 1`;
    expect([...twice]).toEqual([]);
    const lines = new Map<unknown, number>();
    for (const l of LOGS) if (l.msg === 'decision') lines.set(l.decision_id, (lines.get(l.decision_id) ?? 0) + 1);
    const ids = await db.sql<{ id: string }[]>`select id::text from decisions`;
    for (const { id } of ids) expect(lines.get(id), id).toBe(1);
    expect([...lines.values()].every((n) => n === 1)).toBe(true);
    const [all] = await db.sql<{ n: number }[]>`select count(*)::int as n from decisions`;
    let written = 0;
    for (const t of apps) written += (await t.ctx.metrics.decisionRecordsWritten.get()).values[0]?.value ?? 0;
    expect(written).toBe(all!.n);
  });
});
