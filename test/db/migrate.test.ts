// migrate(): applied once, safe when replicas race, and refusing every kind of drift.
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { createApprovalStore } from '../../src/approvals/store.js';
import { approvalHash, canonicalize } from '../../src/json/canonical.js';
import { createSql } from '../../src/db/connect.js';
import { MigrationError, migrate } from '../../src/db/migrate.js';
import { ensurePartitions } from '../../src/records/partitions.js';
import { decisionById } from '../../src/records/query.js';
import { MIGRATIONS_DIR, createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { request } from '../approvals/fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()?.();
});

async function emptyDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false });
  cleanup.push(() => db.drop());
  return db;
}

async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-migrations-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

async function appliedVersions(db: TestDatabase): Promise<number[]> {
  const rows = await db.sql<{ version: number }[]>`select version from schema_migrations order by version`;
  return rows.map((r) => r.version);
}

test('the real migrations apply once; a second run applies nothing', async () => {
  const db = await emptyDatabase();
  expect(await migrate(db.sql, MIGRATIONS_DIR)).toEqual({
    applied: [
      '0001_approvals.sql',
      '0002_column_domains.sql',
      '0003_fewer_indexes.sql',
      '0004_guard_by_column.sql',
      '0005_requirements.sql',
      '0006_context.sql',
      '0007_cancel_and_run.sql',
      '0008_idempotency_keys.sql',
      '0009_webhook_outbox.sql',
      '0010_decision_message.sql',
      '0011_operator_sessions.sql',
      '0012_budgets.sql',
      '0013_decision_records.sql',
      '0014_decision_records_json.sql',
      '0015_idempotency_references.sql',
      '0016_decision_records_stage.sql',
      '0017_approval_result.sql',
      '0018_idempotency_inspect.sql',
      '0019_approval_grants.sql',
      '0020_display_names.sql',
      '0021_amendments.sql',
    ],
  });
  expect(await migrate(db.sql, MIGRATIONS_DIR)).toEqual({ applied: [] });
  expect(await appliedVersions(db)).toEqual([
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
  ]);
  const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from approvals`;
  expect(row?.n).toBe(0);
  // Not analyzed while empty (reltuples -1: never): plans made on "empty" statistics would seq-scan
  // the tables as they grow, until autovacuum analyzed them.
  const [stats] = await db.sql<
    { reltuples: number }[]
  >`select reltuples::int from pg_class where relname = 'approvals'`;
  expect(stats?.reltuples).toBe(-1);
});

test('a database that is not UTF8 is refused before anything is applied', async () => {
  const db = await createTestDatabase({ migrate: false, encoding: 'SQL_ASCII' });
  cleanup.push(() => db.drop());
  await expect(migrate(db.sql, MIGRATIONS_DIR)).rejects.toThrow(MigrationError);
  await expect(migrate(db.sql, MIGRATIONS_DIR)).rejects.toThrow(
    /encoding is SQL_ASCII; Gatehouse needs a UTF8 database/,
  );
  const [row] = await db.sql<{ t: string | null }[]>`select to_regclass('approvals')::text as t`;
  expect(row?.t).toBeNull();
});

test('two replicas migrating at once from two pools: both succeed, one applied set', async () => {
  const db = await emptyDatabase();
  const other = createSql(db.url);
  cleanup.push(() => other.end());
  const results = await Promise.all([migrate(db.sql, MIGRATIONS_DIR), migrate(other, MIGRATIONS_DIR)]);
  expect(results.map((r) => r.applied).sort()).toEqual([
    [],
    [
      '0001_approvals.sql',
      '0002_column_domains.sql',
      '0003_fewer_indexes.sql',
      '0004_guard_by_column.sql',
      '0005_requirements.sql',
      '0006_context.sql',
      '0007_cancel_and_run.sql',
      '0008_idempotency_keys.sql',
      '0009_webhook_outbox.sql',
      '0010_decision_message.sql',
      '0011_operator_sessions.sql',
      '0012_budgets.sql',
      '0013_decision_records.sql',
      '0014_decision_records_json.sql',
      '0015_idempotency_references.sql',
      '0016_decision_records_stage.sql',
      '0017_approval_result.sql',
      '0018_idempotency_inspect.sql',
      '0019_approval_grants.sql',
      '0020_display_names.sql',
      '0021_amendments.sql',
    ],
  ]);
  expect(await appliedVersions(db)).toEqual([
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
  ]);
});

test('new files apply in order after the applied ones, each once', async () => {
  const db = await emptyDatabase();
  const dir = await migrationsDir({ '0001_a.sql': 'create table a (x int);' });
  expect((await migrate(db.sql, dir)).applied).toEqual(['0001_a.sql']);
  await writeFile(join(dir, '0002_b.sql'), 'create table b (x int);\ninsert into a values (1);');
  await writeFile(join(dir, '0003_c.sql'), 'insert into a select x + 1 from a;');
  expect((await migrate(db.sql, dir)).applied).toEqual(['0002_b.sql', '0003_c.sql']);
  expect(await db.sql`select x from a order by x`).toEqual([{ x: 1 }, { x: 2 }]);
});

test('a failing file rolls back the whole run: nothing half-applied', async () => {
  const db = await emptyDatabase();
  const dir = await migrationsDir({
    '0001_a.sql': 'create table a (x int);',
    '0002_b.sql': 'create table b (x int); selec 1;',
  });
  await expect(migrate(db.sql, dir)).rejects.toMatchObject({ code: '42601' });
  expect(await db.sql`select to_regclass('a') as a, to_regclass('schema_migrations') as m`).toEqual([
    { a: null, m: null },
  ]);
});

test('refuses a gap, a repeat, or a malformed name, before touching the database', async () => {
  const db = await emptyDatabase();
  const gap = await migrationsDir({ '0001_a.sql': 'select 1;', '0003_c.sql': 'select 1;' });
  await expect(migrate(db.sql, gap)).rejects.toThrow(/expected 0002, found 0003_c\.sql/);
  const repeat = await migrationsDir({ '0001_a.sql': 'select 1;', '0001_b.sql': 'select 1;' });
  await expect(migrate(db.sql, repeat)).rejects.toBeInstanceOf(MigrationError);
  const noZero = await migrationsDir({ '0002_a.sql': 'select 1;' });
  await expect(migrate(db.sql, noZero)).rejects.toBeInstanceOf(MigrationError);
  for (const name of ['1_a.sql', '0001-a.sql', '0001_A.sql', '0001_.sql', '00001_a.sql']) {
    const dir = await migrationsDir({ [name]: 'select 1;' });
    await expect(migrate(db.sql, dir), name).rejects.toThrow(/is not NNNN_name\.sql/);
  }
  expect(await db.sql`select to_regclass('schema_migrations') as m`).toEqual([{ m: null }]);
});

test('refuses an edited applied file and an applied file missing from disk', async () => {
  const db = await emptyDatabase();
  const dir = await migrationsDir({ '0001_a.sql': 'create table a (x int);', '0002_b.sql': 'create table b (x int);' });
  await migrate(db.sql, dir);

  const original = await readFile(join(dir, '0002_b.sql'), 'utf8');
  await writeFile(join(dir, '0002_b.sql'), original + '\n-- a harmless-looking comment');
  await expect(migrate(db.sql, dir)).rejects.toThrow(/0002_b\.sql differs from the applied 0002_b\.sql/);
  await writeFile(join(dir, '0002_b.sql'), original);

  await rm(join(dir, '0002_b.sql'));
  await expect(migrate(db.sql, dir)).rejects.toThrow(/0002_b\.sql \(version 2\) is applied but missing from disk/);

  // A rename of an applied file is drift too.
  await writeFile(join(dir, '0002_renamed.sql'), original);
  await expect(migrate(db.sql, dir)).rejects.toBeInstanceOf(MigrationError);
  await rm(join(dir, '0002_renamed.sql'));
  await writeFile(join(dir, '0002_b.sql'), original);
  expect(await migrate(db.sql, dir)).toEqual({ applied: [] });
});

test('0002 to 0013 on a database holding approvals: the rows stay as they were and keep moving', async () => {
  const db = await emptyDatabase();
  const first = await migrationsDir({
    '0001_approvals.sql': await readFile(join(MIGRATIONS_DIR, '0001_approvals.sql'), 'utf8'),
  });
  await migrate(db.sql, first);
  // Rows as a replica of 0001's time wrote them: one requirement, in kind/reason/rule/capability/presentation.
  const old = request({ sub: 'agent-a' });
  const legacyRow = async (id: string, sub: string, status: 'pending' | 'granted'): Promise<void> => {
    const decided = status === 'granted';
    await db.sql`
      insert into approvals (id, status, hash, kind, tool, args, capability, presentation, reason, rule, requester_sub,
                             requester_team, requester_agent, policies, expires_at, decided_by, decided_at)
      values (${id}, ${status}, ${old.descriptor.hash}, ${old.descriptor.kind}, ${old.tool}, ${canonicalize(old.args)},
              ${canonicalize(old.descriptor.capability)}, ${canonicalize(old.descriptor.presentation)},
              ${old.descriptor.requirements[0]!.reason}, ${old.descriptor.requirements[0]!.rule}, ${sub}, 'support', 'helpdesk',
              ${db.sql.json(old.policies.map((p) => ({ ...p })))}, now() + interval '1 hour',
              ${decided ? 'operator-1' : null}, ${decided ? db.sql`now()` : null})`;
  };
  const pendingId = '0190a0c0-0000-7000-8000-00000000000a';
  const grantedId = '0190a0c0-0000-7000-8000-00000000000b';
  await legacyRow(pendingId, 'agent-a', 'pending');
  await legacyRow(grantedId, 'agent-b', 'granted');
  const store = createApprovalStore(db.sql, { approvalTtlMs: 3_600_000, grantTtlMs: 600_000, deadlineMs: 10_000 });
  const before = await db.sql`select * from approvals order by id`;

  expect(await migrate(db.sql, MIGRATIONS_DIR)).toEqual({
    applied: [
      '0002_column_domains.sql',
      '0003_fewer_indexes.sql',
      '0004_guard_by_column.sql',
      '0005_requirements.sql',
      '0006_context.sql',
      '0007_cancel_and_run.sql',
      '0008_idempotency_keys.sql',
      '0009_webhook_outbox.sql',
      '0010_decision_message.sql',
      '0011_operator_sessions.sql',
      '0012_budgets.sql',
      '0013_decision_records.sql',
      '0014_decision_records_json.sql',
      '0015_idempotency_references.sql',
      '0016_decision_records_stage.sql',
      '0017_approval_result.sql',
      '0018_idempotency_inspect.sql',
      '0019_approval_grants.sql',
      '0020_display_names.sql',
      '0021_amendments.sql',
    ],
  });
  const after = await db.sql`select * from approvals order by id`;
  expect(
    after.map(({ requirements, context, run_id, decision_message, result, requester_name, ...rest }) => ({
      requirements,
      context,
      run_id,
      decision_message,
      result,
      requester_name,
      rest,
    })),
  ).toEqual(
    before.map((rest) => ({
      requirements: null,
      context: null,
      run_id: null,
      decision_message: null,
      result: null,
      requester_name: null,
      rest,
    })),
  );
  // The change of types discarded the columns' statistics; the migration gathered them again.
  const stats = await db.sql<
    { attname: string }[]
  >`select attname from pg_stats where tablename = 'approvals' order by attname`;
  expect(stats.map((r) => r.attname)).toEqual(expect.arrayContaining(['hash', 'requester_sub', 'status', 'tool']));
  // (A statement prepared before a migration that changes its result fails once: test/db/errors.test.ts.
  // This store's reads name a table of a later migration, so none can be prepared on 0001 here.)
  expect((await store.list({ limit: 10 })).items.map((a) => a.id)).toEqual([grantedId, pendingId]);
  // An old row reads as one requirement, from its own columns, and still re-hashes to its hash.
  const legacy = await store.get(pendingId);
  expect(legacy).toMatchObject({
    status: 'pending',
    requirements: old.descriptor.requirements,
    capability: old.descriptor.capability,
  });
  const { tool, args, kind, capability, presentation } = legacy!;
  expect(approvalHash({ tool, args, kind, capability, presentation })).toBe(old.descriptor.hash);
  expect(await store.consume(grantedId, { sub: 'agent-b' }, old.descriptor.hash)).toMatchObject({
    ok: true,
    approval: { status: 'consumed' },
  });
  expect(await store.deny(pendingId, { sub: 'operator-1' }, 'no')).toMatchObject({
    ok: true,
    approval: { status: 'denied' },
  });
  // New rows go in beside them, and the idempotent create still finds the live row.
  const again = await store.create(request({ sub: 'agent-c' }));
  expect(await store.create(request({ sub: 'agent-c' }))).toEqual({ approval: again.approval, created: false });
});

test('0010: a denial written before it keeps its reason as the message for the agent; its note stays for the record', async () => {
  const db = await emptyDatabase();
  const files: Record<string, string> = {};
  for (const name of [
    '0001_approvals.sql',
    '0002_column_domains.sql',
    '0003_fewer_indexes.sql',
    '0004_guard_by_column.sql',
    '0005_requirements.sql',
    '0006_context.sql',
    '0007_cancel_and_run.sql',
    '0008_idempotency_keys.sql',
    '0009_webhook_outbox.sql',
  ]) {
    files[name] = await readFile(join(MIGRATIONS_DIR, name), 'utf8');
  }
  await migrate(db.sql, await migrationsDir(files));
  const old = request({ sub: 'agent-a' });
  const deniedId = '0190a0c0-0000-7000-8000-00000000000c';
  const grantedId = '0190a0c0-0000-7000-8000-00000000000d';
  for (const [id, sub] of [
    [deniedId, 'agent-a'],
    [grantedId, 'agent-b'],
  ] as const) {
    await db.sql`
      insert into approvals (id, status, hash, kind, tool, args, capability, presentation, reason, rule, requester_sub, policies, expires_at)
      values (${id}, 'pending', ${old.descriptor.hash}, ${old.descriptor.kind}, ${old.tool}, ${canonicalize(old.args)},
              ${canonicalize(old.descriptor.capability)}, ${canonicalize(old.descriptor.presentation)},
              ${old.descriptor.requirements[0]!.reason}, ${old.descriptor.requirements[0]!.rule}, ${sub},
              ${db.sql.json(old.policies.map((p) => ({ ...p })))}, now() + interval '1 hour')`;
  }
  await db.sql`update approvals set status = 'denied', decided_by = 'operator-1', decided_at = now(), decision_note = 'not this order' where id = ${deniedId}`;
  await db.sql`update approvals set status = 'granted', decided_by = 'operator-1', decided_at = now(), decision_note = 'fine' where id = ${grantedId}`;

  expect((await migrate(db.sql, MIGRATIONS_DIR)).applied).toEqual([
    '0010_decision_message.sql',
    '0011_operator_sessions.sql',
    '0012_budgets.sql',
    '0013_decision_records.sql',
    '0014_decision_records_json.sql',
    '0015_idempotency_references.sql',
    '0016_decision_records_stage.sql',
    '0017_approval_result.sql',
    '0018_idempotency_inspect.sql',
    '0019_approval_grants.sql',
    '0020_display_names.sql',
    '0021_amendments.sql',
  ]);
  const rows = await db.sql<{ id: string; decision_note: string; decision_message: string | null }[]>`
    select id, decision_note, decision_message from approvals order by id`;
  expect(rows).toEqual([
    { id: deniedId, decision_note: 'not this order', decision_message: 'not this order' },
    { id: grantedId, decision_note: 'fine', decision_message: null },
  ]);
  // Final, like the other decision fields; and only a denial carries a message.
  await expect(db.sql`update approvals set decision_message = 'rewritten' where id = ${deniedId}`).rejects.toThrow(
    /a decision is final/,
  );
  await expect(db.sql`update approvals set decision_message = 'added' where id = ${grantedId}`).rejects.toThrow(
    /a decision is final/,
  );
  const store = createApprovalStore(db.sql, { approvalTtlMs: 3_600_000, grantTtlMs: 600_000, deadlineMs: 10_000 });
  expect(await store.get(deniedId)).toMatchObject({
    status: 'denied',
    decision_note: 'not this order',
    decision_message: 'not this order',
  });
  const { approval } = await store.create(request({ sub: 'agent-c' }));
  await expect(db.sql`update approvals set decision_message = 'sneaked in' where id = ${approval.id}`).rejects.toThrow(
    /approvals_(pending_undecided|message_on_denial)/,
  );
});

test('0014: decision records written as jsonb read back the same as json, and the array checks still hold', async () => {
  const db = await emptyDatabase();
  const files: Record<string, string> = {};
  for (const name of (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{4}_/.test(f) && f < '0014')) {
    files[name] = await readFile(join(MIGRATIONS_DIR, name), 'utf8');
  }
  await migrate(db.sql, await migrationsDir(files));
  const at = Date.parse('2026-03-04T05:06:07.123Z');
  await ensurePartitions(db.sql, at);
  const id = '0190a0c0-0000-7000-8000-0000000000e1';
  await db.sql`
    insert into decisions (id, decided_at, tool, user_sub, roles, decision, rule, policies, args, claims, context, run)
    values (${id}, '2026-03-04T05:06:07.123456Z', 'refund', 'alice', '["agent"]', 'allow', 'small',
            '["sha256:${db.sql.unsafe('a'.repeat(64))}"]', '{"amount": 12.50, "order": "A-1"}', '{"sub": "alice"}', null, null)`;

  expect((await migrate(db.sql, MIGRATIONS_DIR)).applied).toEqual([
    '0014_decision_records_json.sql',
    '0015_idempotency_references.sql',
    '0016_decision_records_stage.sql',
    '0017_approval_result.sql',
    '0018_idempotency_inspect.sql',
    '0019_approval_grants.sql',
    '0020_display_names.sql',
    '0021_amendments.sql',
  ]);
  const types = await db.sql<{ column_name: string; data_type: string }[]>`
    select column_name, data_type from information_schema.columns
     where table_name = 'decisions' and column_name in ('roles', 'policies', 'args', 'claims', 'context', 'run') order by column_name`;
  expect(types.map((t) => t.data_type)).toEqual(['json', 'json', 'json', 'json', 'json', 'json']);
  const record = await decisionById(db.sql, id);
  expect(record).toMatchObject({
    id,
    tool: 'refund',
    decision: 'allow',
    rule: 'small',
    identity: { user: 'alice', roles: ['agent'], claims: { sub: 'alice' } },
    digests: [`sha256:${'a'.repeat(64)}`],
  });
  expect(Object.keys(record?.args ?? {}).sort()).toEqual(['amount', 'order']);
  // The conversion keeps the text jsonb had made of it (its key order, 12.50 as written).
  const [raw] = await db.sql<{ args: string }[]>`select args::text as args from decisions where id = ${id}`;
  expect(raw?.args).toBe('{"order": "A-1", "amount": 12.50}');
  await expect(
    db.sql`insert into decisions (id, decided_at, tool, user_sub, roles, decision, rule, policies)
           values (gen_random_uuid(), '2026-03-04T06:00:00Z', 'refund', 'alice', '{"not": "an array"}', 'allow', 'small', '[]')`,
  ).rejects.toThrow(/decisions_roles/);
});

test('0015: Idempotency-Key rows written before it are deleted (they name no identity); a row refers to what was done', async () => {
  const db = await emptyDatabase();
  const files: Record<string, string> = {};
  for (const name of (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{4}_/.test(f) && f < '0015')) {
    files[name] = await readFile(join(MIGRATIONS_DIR, name), 'utf8');
  }
  await migrate(db.sql, await migrationsDir(files));
  const hash = `sha256:${'b'.repeat(64)}`;
  await db.sql`
    insert into idempotency_keys (sub, route, key, body_hash, status, response)
    values ('alice', 'decide', 'k1', ${hash}, 200, '{"decision":"allow"}')`;
  expect((await migrate(db.sql, MIGRATIONS_DIR)).applied).toEqual([
    '0015_idempotency_references.sql',
    '0016_decision_records_stage.sql',
    '0017_approval_result.sql',
    '0018_idempotency_inspect.sql',
    '0019_approval_grants.sql',
    '0020_display_names.sql',
    '0021_amendments.sql',
  ]);
  expect(await db.sql`select 1 from idempotency_keys`).toHaveLength(0);
  const row = (kind: string, approval: string | null, decision: string | null, response: string | null) => db.sql`
    insert into idempotency_keys (sub, route, key, body_hash, identity_hash, kind, status, approval_id, decision_id, response)
    values ('alice', 'decide', ${randomKey()}, ${hash}, ${hash}, ${kind}, 200, ${approval}, ${decision}, ${response})`;
  const uuid = '0190a0c0-0000-7000-8000-0000000000f1';
  await row('allow', null, uuid, null);
  await row('redeem', uuid, uuid, null);
  await row('filed', uuid, null, null);
  await row('body', null, null, '{}');
  for (const [kind, approval, decision, response] of [
    ['allow', null, null, null],
    ['allow', uuid, uuid, null],
    ['redeem', null, uuid, null],
    ['filed', uuid, null, '{}'],
    ['body', null, null, null],
    ['answer', null, null, '{}'],
  ] as const) {
    await expect(row(kind, approval, decision, response), kind).rejects.toThrow(/idempotency_keys_kind/);
  }
});

let keys = 0;
const randomKey = (): string => `key-${++keys}`;

test('0020: approvals and sessions written before it have no name (null); a name, once written, never changes', async () => {
  const db = await emptyDatabase();
  const files: Record<string, string> = {};
  for (const name of (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{4}_/.test(f) && f < '0020')) {
    files[name] = await readFile(join(MIGRATIONS_DIR, name), 'utf8');
  }
  await migrate(db.sql, await migrationsDir(files));
  const id = '0190a0c0-0000-7000-8000-0000000000f1';
  await db.sql`
    insert into approvals (id, status, hash, kind, tool, args, requirements, reason, rule, requester_sub, policies, expires_at)
    values (${id}, 'pending', ${`sha256:${'c'.repeat(64)}`}, 'k', 'refund', '{}', '[{"kind":"k","policy":"p","reason":"r","rule":"r"}]',
            'r', 'r', 'alice', '[]', now() + interval '1 hour')`;
  expect((await migrate(db.sql, MIGRATIONS_DIR)).applied).toEqual(['0020_display_names.sql', '0021_amendments.sql']);
  const [row] = await db.sql<
    { requester_name: string | null }[]
  >`select requester_name from approvals where id = ${id}`;
  expect(row?.requester_name).toBeNull();
  // Written once, with the row: as immutable as the sub beside it.
  await expect(db.sql`update approvals set requester_name = 'Alice Liddell' where id = ${id}`).rejects.toThrow(
    /immutable column changed/,
  );
  // The columns immutable before it still are (0017's result among them).
  await expect(db.sql`update approvals set result = '"x"' where id = ${id}`).rejects.toThrow(
    /immutable column changed/,
  );
  const cols = await db.sql<{ column_name: string }[]>`
    select column_name from information_schema.columns where table_name = 'operator_sessions' and column_name = 'name'`;
  expect(cols).toHaveLength(1);
});
