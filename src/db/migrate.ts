// Forward-only, numbered plain-SQL migrations (the postgres-shift discipline): files NNNN_name.sql,
// numbered 1, 2, 3… with no gaps, each applied once and never edited afterwards. Everything runs in
// ONE transaction holding a transaction-scoped advisory lock, so replicas starting together
// serialize: the first applies, the others wait, then find everything applied. Any surprise (a gap,
// an edited or vanished file, a stray name) stops the start with a clear error rather than guessing.

import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sql, TransactionSql } from 'postgres';

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

export interface MigrateOptions {
  /** How long to wait for another replica's migration (the advisory lock) and for table locks. Default 60 s. */
  lockTimeoutMs?: number;
  /** Per-statement limit while migrating (the pool's short default does not fit DDL). Default 10 min. */
  statementTimeoutMs?: number;
}

interface MigrationFile {
  version: number;
  name: string; // the file name, e.g. 0001_approvals.sql
  text: string;
  checksum: string;
}

interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;
// Any constant shared by every replica; pg_advisory_xact_lock takes a bigint.
const MIGRATION_LOCK_KEY = '7318461522097419265';

export async function migrate(sql: Sql, dir: string, options: MigrateOptions = {}): Promise<{ applied: string[] }> {
  const files = await readMigrations(dir);
  const lockTimeout = `${options.lockTimeoutMs ?? 60_000}ms`;
  const statementTimeout = `${options.statementTimeoutMs ?? 600_000}ms`;

  const applied = await sql.begin(async (tx) => {
    await tx`select set_config('lock_timeout', ${lockTimeout}, true), set_config('statement_timeout', ${statementTimeout}, true)`;
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY}::bigint)`;
    await checkEncoding(tx);
    await tx`
      create table if not exists schema_migrations (
        version    int primary key,
        name       text not null,
        checksum   text not null,
        applied_at timestamptz not null default now()
      )`;
    const rows = await tx<AppliedRow[]>`select version, name, checksum from schema_migrations order by version`;
    checkApplied(rows, files);

    const done = new Set(rows.map((r) => r.version));
    const names: string[] = [];
    for (const file of files) {
      if (done.has(file.version)) continue;
      // Simple-protocol query: a file may hold many statements.
      await tx.unsafe(file.text);
      await tx`insert into schema_migrations (version, name, checksum) values (${file.version}, ${file.name}, ${file.checksum})`;
      names.push(file.name);
    }
    return names;
  });
  return { applied };
}

// The schema's length checks count characters, and text must round-trip: in SQL_ASCII (initdb's
// choice without a locale) char_length counts bytes and nothing is validated.
async function checkEncoding(tx: TransactionSql): Promise<void> {
  const [row] = await tx<{ encoding: string }[]>`select current_setting('server_encoding') as encoding`;
  if (row?.encoding !== 'UTF8') {
    throw new MigrationError(
      `the database encoding is ${row?.encoding ?? 'unknown'}; Gatehouse needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8')`,
    );
  }
}

async function readMigrations(dir: string): Promise<MigrationFile[]> {
  const entries = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const files: MigrationFile[] = [];
  for (const name of entries) {
    const match = FILE_NAME.exec(name);
    if (match === null) {
      throw new MigrationError(
        `migration file name ${JSON.stringify(name)} is not NNNN_name.sql (lowercase, digits, _)`,
      );
    }
    const text = await readFile(join(dir, name), 'utf8');
    const checksum = createHash('sha256').update(text, 'utf8').digest('hex');
    files.push({ version: Number(match[1]), name, text, checksum });
  }
  files.forEach((file, i) => {
    if (file.version !== i + 1) {
      throw new MigrationError(
        `migrations must be numbered 0001, 0002, … without gaps or repeats: expected ${String(i + 1).padStart(4, '0')}, found ${file.name}`,
      );
    }
  });
  return files;
}

// The database's history must be a prefix of the files on disk, byte for byte.
function checkApplied(rows: readonly AppliedRow[], files: readonly MigrationFile[]): void {
  const byVersion = new Map(files.map((f) => [f.version, f]));
  for (const row of rows) {
    const file = byVersion.get(row.version);
    if (file === undefined) {
      throw new MigrationError(`migration ${row.name} (version ${row.version}) is applied but missing from disk`);
    }
    if (file.name !== row.name || file.checksum !== row.checksum) {
      throw new MigrationError(
        `migration ${file.name} differs from the applied ${row.name} (checksum or name changed); ` +
          'applied migrations are never edited: add a new one',
      );
    }
  }
}
