// The decision store (DECISION_STORE=postgres) against a real PostgreSQL: /decide's records written
// in batches with their fields, the arguments only with LOG_ARGS and redacted as the log line;
// partitions made ahead and dropped whole past the retention; the bounded queue under a stalled
// database (/decide keeps answering, the drops are counted); GET /decisions paging, filters, roles.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import pino from 'pino';
import { dropExpiredPartitions, ensurePartitions, partitionName } from '../../src/records/partitions.js';
import { insertRecord } from '../../src/records/insert.js';
import { rowJsonOf } from '../../src/records/rows.js';
import type { DecisionLine } from '../../src/policy/record.js';
import {
  createDecisionWriter,
  type DecisionWriter,
  type DecisionWriterOptions,
  type DropReason,
} from '../../src/records/writer.js';
import {
  adminToken,
  agentToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  token,
  type TestApp,
} from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const DAY = 86_400_000;
const LOGS: Record<string, unknown>[] = [];
const auditorToken = (): string => token({ sub: 'auditor-1', team: 'audit', roles: ['auditor'] });

async function partitions(db: TestDatabase): Promise<string[]> {
  const rows = await db.sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
     where p.relname = 'decisions' order by 1`;
  return rows.map((r) => r.name);
}

async function dropped(t: TestApp, reason: string): Promise<number> {
  const metric = await t.ctx.metrics.decisionRecordsDropped.get();
  return metric.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

describe('decision records', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createTestApp({
      env: 'prod',
      database: db,
      logs: LOGS,
      logArgs: true,
      decisionStore: { sql: createSql(db.url, { max: 2 }) },
    });
  });
  afterAll(async () => {
    await t.close();
    await t.ctx.decisionStore?.sql.end();
    await db.drop();
  });

  it('writes each decision with its fields, the arguments, claims and context redacted as the log line', async () => {
    const tok = token({ sub: 'agent-7', team: 'support', agent: 'bot', roles: ['r1'], api_token: 'claim-secret' });
    const a = await post(
      t.app,
      '/decide',
      { tool: 'refund', args: { order: 'A1', amount: 40 }, run: { id: 'run-1' } },
      tok,
    );
    const b = await post(
      t.app,
      '/decide',
      { tool: 'refund', args: { order: 'A2', amount: 120 }, context: { session_secret: 's' } },
      tok,
    );
    // A secret-named argument is recorded redacted.
    const c = await post(
      t.app,
      '/decide',
      { tool: 'lookup_order', args: { order: 'A3', password: 'hunter2' } },
      agentToken('agent-9'),
    );
    await t.writer!.flush();
    const rows = await db.sql`select * from decisions order by decided_at, id`;
    expect(rows.map((r) => r.id)).toEqual([a, b, c].map((r) => (r.json() as { decision_id: string }).decision_id));
    expect(rows[0]).toMatchObject({
      tool: 'refund',
      user_sub: 'agent-7',
      team: 'support',
      agent: 'bot',
      roles: ['r1'],
      env: 'prod',
      run_id: 'run-1',
      decision: 'allow',
      rule: 'refund-support',
      kind: null,
      replayed: false,
      args: { order: 'A1', amount: 40 },
      run: { id: 'run-1' },
    });
    expect(rows[0]!.policies).toEqual((a.json() as { policies: { digest: string }[] }).policies.map((p) => p.digest));
    expect(rows[0]!.claims).toMatchObject({ sub: 'agent-7', api_token: '[redacted]' });
    expect(rows[1]).toMatchObject({
      decision: 'require_approval',
      kind: 'refund_over_cap',
      context: { session_secret: '[redacted]' },
    });
    expect(rows[2]).toMatchObject({
      user_sub: 'agent-9',
      decision: 'allow',
      rule: 'lookups',
      args: { order: 'A3', password: '[redacted]' },
      context: null,
      run_id: null,
    });
    // Written in one batch, counted.
    expect((await t.ctx.metrics.decisionRecordsWritten.get()).values[0]?.value).toBe(3);
  });

  it('creates the partitions of today and the next two days, and drops whole partitions past the retention', async () => {
    const now = Date.now();
    const today = Math.floor(now / DAY) * DAY;
    const names = await partitions(db);
    for (let d = 0; d <= 2; d++) expect(names).toContain(partitionName(today + d * DAY));
    // Old days, as a service that ran then would have left them, with a row each.
    for (const daysAgo of [40, 31, 29]) {
      await ensurePartitions(db.sql, now - daysAgo * DAY);
      await db.sql`insert into decisions (id, decided_at, tool, user_sub, roles, decision, rule, policies)
                   values (gen_random_uuid(), ${new Date(now - daysAgo * DAY).toISOString()}::timestamptz, 't', 'u', '[]', 'deny', 'r', '[]')`;
    }
    const before = await partitions(db);
    const gone = await dropExpiredPartitions(db.sql, now, 30 * DAY);
    // Every partition whose day ended 30 days ago or more: the days of 40 and 31 days ago and those made ahead of them.
    expect(gone.length).toBeGreaterThan(0);
    for (const name of gone)
      expect(
        Date.parse(`${name.slice(10, 14)}-${name.slice(14, 16)}-${name.slice(16, 18)}T00:00:00Z`) + DAY,
      ).toBeLessThanOrEqual(now - 30 * DAY);
    expect(gone).toContain(partitionName(Math.floor((now - 40 * DAY) / DAY) * DAY));
    expect(gone).toContain(partitionName(Math.floor((now - 31 * DAY) / DAY) * DAY));
    const after = await partitions(db);
    expect(after).toEqual(before.filter((n) => !gone.includes(n)));
    expect(after).toContain(partitionName(Math.floor((now - 29 * DAY) / DAY) * DAY));
    const [old] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from decisions where decided_at < now() - interval '30 days'`;
    expect(old?.n).toBe(0);
    const [kept] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from decisions where decided_at < now() - interval '28 days'`;
    expect(kept?.n).toBe(1);
    await db.sql`delete from decisions where tool = 't'`;
  });

  it('GET /decisions: newest first in keyset pages, filtered, for auditors and admins only', async () => {
    const since = new Date().toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await post(
        t.app,
        '/decide',
        { tool: 'lookup_order', args: { order: `P${i}` } },
        agentToken(i % 2 === 0 ? 'pager-even' : 'pager-odd'),
      );
      ids.push((res.json() as { decision_id: string }).decision_id);
    }
    await post(t.app, '/decide', { tool: 'wipe_orders', args: {} }, agentToken('pager-even'));
    await t.writer!.flush();
    const get = (q: string, tok = auditorToken()) =>
      t.app.inject({ method: 'GET', url: `/decisions${q}`, headers: bearer(tok) });
    const seen: { decision_id: string; time: string }[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(
        `?tool=lookup_order&since=${encodeURIComponent(since)}&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as { items: { decision_id: string; time: string }[]; next_cursor: string | null };
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor !== null);
    // Every one once, newest first: decided one after another, so in the reverse order (ties of one
    // microsecond, which a fast machine could make, are ordered by id).
    expect(seen.map((i) => i.decision_id).sort()).toEqual([...ids].sort());
    const newestFirst = [...seen].sort((a, b) =>
      a.time === b.time ? b.decision_id.localeCompare(a.decision_id) : b.time.localeCompare(a.time),
    );
    expect(seen).toEqual(newestFirst);
    if (new Set(seen.map((i) => i.time)).size === seen.length)
      expect(seen.map((i) => i.decision_id)).toEqual([...ids].reverse());
    const byUser = (
      await get(`?user=pager-even&decision=allow&since=${encodeURIComponent(since)}`, adminToken())
    ).json() as {
      items: { user: string; decision: string; args: unknown }[];
    };
    expect(byUser.items.map((i) => [i.user, i.decision])).toEqual([
      ['pager-even', 'allow'],
      ['pager-even', 'allow'],
      ['pager-even', 'allow'],
    ]);
    expect(byUser.items[0]!.args).toEqual({ order: 'P4' });
    const aborted = (await get(`?decision=abort&since=${encodeURIComponent(since)}`)).json() as {
      items: { tool: string }[];
    };
    expect(aborted.items.map((i) => i.tool)).toEqual(['wipe_orders']);
    const until = (await get(`?until=${encodeURIComponent(since)}&tool=lookup_order`)).json() as {
      items: { decision_id: string }[];
    };
    expect(until.items.length).toBeGreaterThan(0); // the first test's
    expect(until.items.filter((i) => ids.includes(i.decision_id))).toEqual([]);
    // Closed query, a cursor only this service issues, roles.
    expect((await get('?bogus=1')).statusCode).toBe(400);
    expect((await get('?decision=maybe')).statusCode).toBe(400);
    expect((await get('?cursor=AAAA')).statusCode).toBe(400);
    expect((await get('', approverToken())).statusCode).toBe(403);
    expect((await get('', agentToken())).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/decisions' })).statusCode).toBe(401);
  });
});

describe('decision records under a stalled database', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createTestApp({
      env: 'prod',
      database: db,
      decisionStore: { sql: createSql(db.url, { max: 2, lockTimeoutMs: 200 }), queueMax: 5, retryMs: 50 },
    });
    await t.writer!.flush(); // the partitions exist
  });
  afterAll(async () => {
    await t.close();
    await t.ctx.decisionStore?.sql.end();
    await db.drop();
  });

  it('keeps answering /decide while the table is locked, drops what the bounded queue cannot hold and counts it, then writes the rest', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = db.sql.begin(async (tx) => {
      await tx`lock table decisions in access exclusive mode`;
      locked();
      await released;
    });
    await isLocked;
    for (let i = 0; i < 20; i++) {
      const res = await post(
        t.app,
        '/decide',
        { tool: 'lookup_order', args: { order: `S${i}` } },
        agentToken('stalled'),
      );
      expect(res.statusCode).toBe(200);
      expect((res.json() as { decision: string }).decision).toBe('allow');
    }
    expect(t.writer!.queued).toBe(5);
    expect(await dropped(t, 'queue_full')).toBe(15);
    // The write waits on the lock, times out (lock_timeout) and keeps the batch for the retry.
    await t.writer!.flush();
    expect(t.writer!.queued).toBe(5);
    release();
    await holder;
    await t.writer!.flush();
    expect(t.writer!.queued).toBe(0);
    const [n] = await db.sql<{ n: number }[]>`select count(*)::int as n from decisions where user_sub = 'stalled'`;
    expect(n?.n).toBe(5);
    // Recorded without arguments: LOG_ARGS is off in this app.
    const [row] = await db.sql`select args, claims, context, run from decisions where user_sub = 'stalled' limit 1`;
    expect(row).toEqual({ args: null, claims: null, context: null, run: null });
    expect(await dropped(t, 'queue_full')).toBe(15);
  });
});

describe('decision partitions made by two replicas at once', () => {
  it('both succeed, and each day has one partition', async () => {
    const db = await createTestDatabase();
    const a = createSql(db.url, { max: 1 });
    const b = createSql(db.url, { max: 1 });
    try {
      const start = Date.parse('2031-01-01T00:00:00Z');
      for (let k = 0; k < 10; k++) {
        const at = start + k * 10 * DAY;
        await Promise.all([ensurePartitions(a, at), ensurePartitions(b, at)]);
      }
      const [n] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_inherits i join pg_class p on p.oid = i.inhparent
         where p.relname = 'decisions' and i.inhrelid::regclass::text like 'decisions_2031%'`;
      expect(n?.n).toBe(30);
    } finally {
      await a.end();
      await b.end();
      await db.drop();
    }
  });
});

describe('the decision writer', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** A log line's fields as src/http/routes/decide.ts makes them. */
  // Cast: some tests push what a DecisionLine's type rules out (a decision the table refuses, a BigInt).
  const fields = (id: string, over: Record<string, unknown> = {}): DecisionLine =>
    ({
      decision_id: id,
      tool: 'lookup_order',
      decision: 'allow',
      rule: 'lookup',
      policies: ['sha256:00'],
      user: 'writer-test',
      team: null,
      agent: null,
      env: 'prod',
      roles: [],
      ...over,
    }) as unknown as DecisionLine;

  /** A writer on a pool of its own, as src/service.ts makes it; `use` runs with it, then both are closed. */
  async function withWriter(
    options: Partial<DecisionWriterOptions>,
    use: (writer: DecisionWriter) => Promise<void>,
  ): Promise<void> {
    const sql = createSql(db.url, { max: 1 });
    const writer = createDecisionWriter(sql, {
      queueMax: 10,
      retentionMs: 30 * DAY,
      log: pino({ level: 'silent' }),
      ...options,
    });
    try {
      await use(writer);
    } finally {
      await writer.close();
      await sql.end();
    }
  }

  it('stores the instant decided to the microsecond', async () => {
    const at = Date.parse('2026-12-02T10:00:00.123Z') + 0.456;
    await withWriter({ now: () => at }, async (writer) => {
      writer.push(fields('00000000-0000-4000-8000-000000000001'));
      await writer.flush();
      const [row] = await db.sql<{ at: string }[]>`
        select to_char(decided_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at from decisions where id = '00000000-0000-4000-8000-000000000001'`;
      expect(row?.at).toBe('2026-12-02T10:00:00.123456Z');
    });
  });

  it('drops a record the database refuses and one it cannot serialize as rejected, counts them, and writes the others', async () => {
    const drops: [DropReason, number][] = [];
    let written = 0;
    const options = {
      onDrop: (reason: DropReason, count: number) => drops.push([reason, count]),
      onWritten: (count: number) => (written += count),
    };
    await withWriter(options, async (writer) => {
      await writer.flush(); // the partitions made, so the next write is the batch alone
      // A decision the table's check refuses (decisions_decision) between two it takes: the batch
      // is refused whole, then written row by row.
      writer.push(fields('00000000-0000-4000-8000-000000000011', { user: 'before-the-refused' }));
      writer.push(fields('00000000-0000-4000-8000-000000000012', { decision: 'maybe' }));
      writer.push(fields('00000000-0000-4000-8000-000000000013', { user: 'after-the-refused' }));
      await writer.flush();
      expect(drops).toEqual([['rejected', 1]]);
      expect(written).toBe(2);
      expect(writer.queued).toBe(0);
      // Fields JSON cannot carry (a BigInt) are dropped when queued, alone.
      writer.push(fields('00000000-0000-4000-8000-000000000014', { args: { n: 1n } }));
      expect(drops).toEqual([
        ['rejected', 1],
        ['rejected', 1],
      ]);
      expect(writer.queued).toBe(0);
      writer.push(fields('00000000-0000-4000-8000-000000000015', { user: 'after-the-refusals' }));
      await writer.flush();
      expect(written).toBe(3);
      const rows = await db.sql<{ id: string }[]>`select id from decisions where user_sub <> 'writer-test' order by id`;
      expect(rows.map((r) => r.id)).toEqual([
        '00000000-0000-4000-8000-000000000011',
        '00000000-0000-4000-8000-000000000013',
        '00000000-0000-4000-8000-000000000015',
      ]);
    });
  });
  it("rowOf: a row for a decision's own transaction only once its day's partition is known, and only one PostgreSQL takes", async () => {
    let at = Date.now();
    await withWriter({ now: () => at }, async (writer) => {
      const id = '00000000-0000-4000-8000-000000000021';
      expect(writer.rowOf(fields(id))).toBeNull(); // the partitions not checked yet: queue it
      await writer.flush();
      const row = writer.rowOf(fields(id, { user: 'in-a-transaction' }));
      expect(row).not.toBeNull();
      await db.sql.begin((tx) => insertRecord(tx, row!));
      const [stored] = await db.sql<{ user_sub: string }[]>`select user_sub from decisions where id = ${id}`;
      expect(stored?.user_sub).toBe('in-a-transaction');
      expect(writer.queued).toBe(0);
      // What PostgreSQL refuses (U+0000 as text, a lone surrogate even as json) would undo the
      // transaction's work: no row, the record goes to the queue.
      for (const over of [{ user: 'a\u0000b' }, { args: { s: 'x\ud800' } }, { run_id: '\udc00' }]) {
        expect(writer.rowOf(fields(id, over))).toBeNull();
        await expect(
          db.sql.begin((tx) => insertRecord(tx, rowJsonOf(at, fields('00000000-0000-4000-8000-000000000022', over)))),
        ).rejects.toThrow();
      }
      // A surrogate pair, and the text of an escape (a backslash written out), are taken.
      const fine = writer.rowOf(
        fields('00000000-0000-4000-8000-000000000023', { user: '😀 \\u0000', args: { s: '\\ud800' } }),
      );
      expect(fine).not.toBeNull();
      await db.sql.begin((tx) => insertRecord(tx, fine!));
      // Past the days made ahead: none.
      at += 3 * DAY;
      expect(writer.rowOf(fields(id))).toBeNull();
    });
  });
});
