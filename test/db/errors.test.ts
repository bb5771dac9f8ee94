// Error classification: transient or unavailable → StoreUnavailableError (503); anything else is a
// bug and passes through unchanged (500). A table of codes, then real errors from a real server.
import { describe, expect, test, afterAll, beforeAll } from 'vitest';
import postgres from 'postgres';
import { createSql } from '../../src/db/connect.js';
import { StoreUnavailableError, toStoreError, unavailableFrom } from '../../src/db/errors.js';
import { freePort } from '../../src/db/embedded.js';
import { createTestDatabase, databaseUrl } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const coded = (code: string): Error => Object.assign(new Error(`failure ${code}`), { code });

const UNAVAILABLE: [string, string][] = [
  ['CONNECT_TIMEOUT', 'connection'],
  ['CONNECTION_CLOSED', 'connection'],
  ['CONNECTION_ENDED', 'connection'],
  ['CONNECTION_DESTROYED', 'connection'],
  ['ECONNREFUSED', 'connection'],
  ['ECONNRESET', 'connection'],
  ['EPIPE', 'connection'],
  ['ETIMEDOUT', 'connection'],
  ['ENOTFOUND', 'connection'],
  ['EAI_AGAIN', 'connection'],
  ['08000', 'server'],
  ['08006', 'server'],
  ['08P01', 'server'],
  ['53300', 'server'],
  ['53100', 'server'],
  ['53200', 'server'],
  ['57P01', 'server'],
  ['57P02', 'server'],
  ['57P03', 'server'],
  ['57P05', 'server'],
  ['57014', 'server'],
  ['25P03', 'server'],
  ['25006', 'server'],
  ['28P01', 'server'],
  ['28000', 'server'],
  ['3D000', 'server'],
  ['55P03', 'contention'],
  ['40001', 'contention'],
  ['40P01', 'contention'],
];

// Bugs: syntax, undefined objects, constraint and type errors, data errors, privileges, our own
// errors, and non-errors.
const BUGS: unknown[] = [
  coded('42601'),
  coded('42P01'),
  coded('42703'),
  coded('42501'),
  coded('23505'),
  coded('23514'),
  coded('22P02'),
  coded('22001'),
  coded('P0001'),
  coded('57000'), // operator_intervention, but not one of the shutdown codes
  coded('XX000'),
  coded('ENOENT'),
  coded('EPERM'),
  coded('UNDEFINED_VALUE'),
  coded('MAX_PARAMETERS_EXCEEDED'),
  new Error('plain'),
  new TypeError('x is undefined'),
  Object.assign(new Error('numeric code'), { code: 8006 }),
  'a string',
  null,
  undefined,
];

describe('classification table', () => {
  test.each(UNAVAILABLE)('%s → StoreUnavailableError(%s)', (code, reason) => {
    const error = coded(code);
    const mapped = toStoreError(error);
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect(mapped).toMatchObject({ reason, sourceCode: code, cause: error });
    expect((mapped as Error).message).toBe(`the approval store is unavailable (${reason})`);
  });

  test.each(BUGS.map((e) => [e]))('%s → rethrown as is', (error) => {
    expect(unavailableFrom(error)).toBeNull();
    expect(toStoreError(error)).toBe(error);
  });

  test('an AggregateError of connect failures (every address of a host) is unavailable', () => {
    const error = new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], 'connect failed');
    expect(toStoreError(error)).toMatchObject({ name: 'StoreUnavailableError', sourceCode: 'ECONNREFUSED' });
    expect(toStoreError(new AggregateError([new Error('x')]))).toBeInstanceOf(AggregateError);
  });

  test('a prepared statement outdated by a migration is unavailable; another 0A000 is a bug', () => {
    const stale = Object.assign(coded('0A000'), { routine: 'RevalidateCachedQuery' });
    expect(toStoreError(stale)).toMatchObject({ name: 'StoreUnavailableError', reason: 'server', sourceCode: '0A000' });
    const other = Object.assign(coded('0A000'), { routine: 'transformLockingClause' });
    expect(toStoreError(other)).toBe(other);
  });

  test('our own StoreUnavailableError passes through unchanged', () => {
    const own = new StoreUnavailableError('deadline');
    expect(toStoreError(own)).toBe(own);
  });
});

describe('real failures', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    await db.sql`create table t (id int primary key)`;
  });
  afterAll(async () => {
    await db.drop();
  });

  const caught = async (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      () => new Error('no error'),
      (e: unknown) => e,
    );

  test('statement_timeout (57014) and lock_timeout (55P03) are unavailable, without SQL or values in the message', async () => {
    const timeout = await caught(
      db.sql.begin(async (tx) => {
        await tx`set local statement_timeout = '10ms'`;
        await tx`select pg_sleep(${5})`;
      }),
    );
    expect(toStoreError(timeout)).toMatchObject({
      sourceCode: '57014',
      message: 'the approval store is unavailable (server)',
    });

    let release = (): void => {};
    let locked = (): void => {};
    const holding = new Promise<void>((resolve) => (locked = resolve));
    const holder = db.sql.begin(async (tx) => {
      await tx`lock table t in access exclusive mode`;
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await holding;
    const waiter = createSql(db.url, { max: 1, lockTimeoutMs: 20 });
    try {
      const error = await caught(waiter`select * from t where id = ${'secret-value'.length}`);
      const mapped = toStoreError(error);
      expect(mapped).toMatchObject({ sourceCode: '55P03', reason: 'contention' });
      expect(String((mapped as Error).message)).not.toMatch(/select|secret/i);
    } finally {
      release();
      await holder;
      await waiter.end();
    }
  });

  test('programming and data errors are bugs: rethrown unchanged', async () => {
    for (const query of [
      db.sql`select * from no_such_table`,
      db.sql`selec 1`,
      db.sql`insert into t values (1), (1)`,
      db.sql`select ${'not-a-uuid'}::uuid`,
    ]) {
      const error = await caught(query);
      expect(error).toBeInstanceOf(postgres.PostgresError);
      expect(toStoreError(error)).toBe(error);
    }
  });

  test('a closed port, a missing database, a wrong password, an ended pool: unavailable', async () => {
    const closedPort = createSql(`postgres://postgres:x@127.0.0.1:${await freePort()}/postgres`, {
      connectTimeoutMs: 2000,
    });
    const missingDb = createSql(databaseUrl(db.url, 'no_such_database_here'));
    const wrongPassword = new URL(db.url);
    wrongPassword.password = 'wrong';
    const badLogin = createSql(wrongPassword.toString());
    const ended = createSql(db.url);
    await ended.end();
    const expected: [postgres.Sql, string][] = [
      [closedPort, 'ECONNREFUSED'],
      [missingDb, '3D000'],
      [badLogin, '28P01'],
      [ended, 'CONNECTION_ENDED'],
    ];
    for (const [sql, code] of expected) {
      const error = await caught(sql`select 1`);
      expect(toStoreError(error), code).toMatchObject({ name: 'StoreUnavailableError', sourceCode: code });
      await sql.end();
    }
  });
});
