// createSql: the server-side session limits reach every connection, and values come back untransformed.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
});
afterAll(async () => {
  await db.drop();
});

test('defaults: statement 5 s, lock 2 s, idle in transaction 10 s, application_name gatehouse', async () => {
  const [row] = await db.sql`
    select current_setting('statement_timeout') as statement_timeout,
           current_setting('lock_timeout') as lock_timeout,
           current_setting('idle_in_transaction_session_timeout') as idle_in_tx,
           current_setting('application_name') as application_name`;
  expect(row).toEqual({
    statement_timeout: '5s',
    lock_timeout: '2s',
    idle_in_tx: '10s',
    application_name: 'gatehouse',
  });
});

test('options reach the server', async () => {
  const sql = createSql(db.url, {
    statementTimeoutMs: 1234,
    lockTimeoutMs: 567,
    idleInTransactionTimeoutMs: 8900,
    applicationName: 'gh-test',
  });
  try {
    const [row] = await sql`
      select current_setting('statement_timeout') as s, current_setting('lock_timeout') as l,
             current_setting('idle_in_transaction_session_timeout') as i, current_setting('application_name') as a`;
    expect(row).toEqual({ s: '1234ms', l: '567ms', i: '8900ms', a: 'gh-test' });
  } finally {
    await sql.end();
  }
});

test('timestamps are Dates and column names are not transformed', async () => {
  const [row] = await db.sql`select now() as created_at, 1 as "someCamel", 2 as snake_case_name`;
  expect(row?.['created_at']).toBeInstanceOf(Date);
  expect(Object.keys(row ?? {})).toEqual(['created_at', 'someCamel', 'snake_case_name']);
});
