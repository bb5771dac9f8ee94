// Databases for tests. createTestDatabase(): a fresh, migrated database per test file on the shared
// test server (test/setup/postgres.ts). startPrivatePostgres(): a server of the test's own, to stop
// and restart in fault tests, always on the same port so existing pools can reconnect to it.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import type { Sql } from 'postgres';
import { inject } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import type { SqlOptions } from '../../src/db/connect.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';
import { childPids, kill9 } from './process.js';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/**
 * A new uniquely named database, migrated (unless migrate: false), with a pool on it. drop() ends the
 * pool and removes the database.
 */
export async function createTestDatabase(
  options: SqlOptions & { migrate?: boolean; encoding?: string } = {},
): Promise<TestDatabase> {
  const adminUrl = inject('databaseUrl');
  const name = `gatehouse_test_${randomBytes(6).toString('hex')}`;
  const { migrate: migrated = true, encoding, ...sqlOptions } = options;
  // A migrated database is a copy of the template the global setup migrated (test/setup/postgres.ts):
  // the same tables, indexes and migration records as running the migrations here, in less time.
  const template = migrated && encoding === undefined ? inject('templateDatabase') : undefined;
  await withAdmin(adminUrl, (admin) =>
    template !== undefined
      ? admin`create database ${admin(name)} template ${admin(template)}`
      : encoding === undefined
        ? admin`create database ${admin(name)}`
        : admin.unsafe(`create database "${name}" template template0 encoding '${encoding}' locale 'C'`),
  );
  const url = databaseUrl(adminUrl, name);
  const sql = createSql(url, sqlOptions);
  if (migrated && template === undefined) await migrate(sql, MIGRATIONS_DIR);
  return {
    url,
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      // force: other pools a test opened on it (and their LISTEN connections) are cut off.
      await withAdmin(adminUrl, (admin) => admin`drop database if exists ${admin(name)} with (force)`);
    },
  };
}

/** The same server, another database. */
export function databaseUrl(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

async function withAdmin(adminUrl: string, fn: (admin: Sql) => Promise<unknown>): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await fn(admin);
  } finally {
    await admin.end();
  }
}

export interface PrivatePostgres {
  /** URL of the `gatehouse` database (migrated). Stays valid across stop() and start(). */
  url: string;
  stop(): Promise<void>;
  /** Kill the server outright (SIGKILL), as a crash would. */
  crash(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server (if running) and deletes its data. */
  dispose(): Promise<void>;
}

/** A server only this test uses, that it can stop and start again (data kept, same port). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-private-pg-'));
  // Server settings stay the defaults (fsync on): this server is the one durability is tested on.
  let server = await startEmbeddedPostgres({ dataDir, initdbFlags: ['--no-sync'] });
  const { port, url } = server;
  let running = true;
  const migrator = createSql(url, { max: 1 });
  await migrate(migrator, MIGRATIONS_DIR);
  await migrator.end();
  return {
    url,
    async stop() {
      if (!running) return;
      await server.stop();
      running = false;
    },
    async crash() {
      // SIGKILL the postmaster and its backends: no shutdown checkpoint; the next start replays the WAL.
      const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      for (const p of [pid, ...childPids(pid)]) kill9(p);
      for (let i = 0; i < 100; i++) {
        try {
          process.kill(pid, 0);
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      await rm(join(dataDir, 'postmaster.pid'), { force: true });
      running = false;
    },
    async start() {
      if (running) return;
      server = await startEmbeddedPostgres({ dataDir, port });
      running = true;
    },
    async dispose() {
      if (running) await server.stop();
      running = false;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
