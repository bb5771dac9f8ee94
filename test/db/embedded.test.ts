// startEmbeddedPostgres beyond what the test servers already exercise (fresh start in globalSetup,
// restart with kept data in the fault tests): refusing a data directory it did not create, and a
// cluster that is UTF8 whatever locale the environment names.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { expect, test } from 'vitest';
import { freePort, startEmbeddedPostgres } from '../../src/db/embedded.js';

test('a cluster directory without our password file is refused with a clear message', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-foreign-pg-'));
  try {
    await writeFile(join(dataDir, 'PG_VERSION'), '18\n');
    await expect(startEmbeddedPostgres({ dataDir })).rejects.toThrow(/no gatehouse\.password/);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('freePort returns a bindable TCP port', async () => {
  const port = await freePort();
  expect(port).toBeGreaterThan(0);
  expect(port).toBeLessThan(65536);
});

test('a fresh cluster is UTF8 with the C locale even when the environment names no locale', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-locale-pg-'));
  const saved = { LANG: process.env['LANG'], LC_ALL: process.env['LC_ALL'], LC_CTYPE: process.env['LC_CTYPE'] };
  for (const name of Object.keys(saved)) delete process.env[name];
  try {
    const server = await startEmbeddedPostgres({ dataDir, initdbFlags: ['--no-sync'] });
    const sql = postgres(server.url, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ encoding: string; collate: string; length: number }[]>`
        select current_setting('server_encoding') as encoding, datcollate as collate, char_length('é€') as length
          from pg_database where datname = current_database()`;
      expect(row).toEqual({ encoding: 'UTF8', collate: 'C', length: 2 });
    } finally {
      await sql.end();
      await server.stop();
    }
  } finally {
    for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
    await rm(dataDir, { recursive: true, force: true });
  }
});
