// Reading the decision store (DECISION_STORE=postgres: docs/operations.md "Decision records") for
// `replay --from-db` and `cases --from-decision`: the database of DATABASE_URL, read here and
// nowhere else in the CLI, on a pool of one connection closed when the command is done.
import type { Sql } from 'postgres';
import { createSql } from '../db/connect.js';
import { EXIT, type Io } from './io.js';

/** Runs `fn` on the store of DATABASE_URL; exit 2 after saying why when it is unset or unreachable. */
export async function withDecisionStore(command: string, io: Io, fn: (sql: Sql) => Promise<number>): Promise<number> {
  const url = process.env.DATABASE_URL ?? '';
  if (url === '') {
    io.err(
      `gatehouse ${command}: DATABASE_URL is not set (the database the service records decisions in, DECISION_STORE=postgres)\n`,
    );
    return EXIT.invalid;
  }
  // Reads of days of records: a longer statement timeout than the service's requests.
  const sql = createSql(url, { max: 1, statementTimeoutMs: 300_000, applicationName: `gatehouse-${command}` });
  try {
    return await fn(sql);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    io.err(
      `gatehouse ${command}: cannot read the decision store: ${typeof code === 'string' ? `${code} ` : ''}${(err as Error).message}\n`,
    );
    return EXIT.invalid;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** An option's RFC 3339 date-time, or what is wrong with it. */
export function dateOption(name: string, text: string | undefined): Date | undefined | string {
  if (text === undefined) return undefined;
  const at = new Date(text);
  if (
    !/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/.test(text) ||
    Number.isNaN(at.getTime())
  ) {
    return `--${name} must be a date-time like 2026-12-01T00:00:00Z (or a date, 2026-12-01)`;
  }
  return at;
}
