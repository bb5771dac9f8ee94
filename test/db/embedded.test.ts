// startEmbeddedPostgres beyond what the test servers already exercise (fresh start in globalSetup,
// restart with kept data in the fault tests): refusing a data directory it did not create, a data
// directory inside a private one, and a cluster that is UTF8 whatever locale the environment names.
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
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

test('a data directory inside a private (0700) one: as root, a clear error saying what to change; otherwise it starts', async () => {
  const privateDir = await mkdtemp(join(tmpdir(), 'gatehouse-private-')); // mode 0700, like a home directory
  const dataDir = join(privateDir, 'pg'); // as main.ts places it under DATA_DIR
  try {
    expect((await stat(privateDir)).mode & 0o777).toBe(0o700);
    const started = startEmbeddedPostgres({ dataDir, initdbFlags: ['--no-sync'] });
    if (userInfo().uid === 0) {
      // PostgreSQL runs as the OS user `postgres`, which cannot enter privateDir.
      await expect(started).rejects.toThrow(/Running as root, PostgreSQL runs as the OS user "postgres".*chmod o\+x/);
    } else {
      const server = await started;
      await server.stop();
      expect((await stat(join(dataDir, 'PG_VERSION'))).isFile()).toBe(true);
    }
  } finally {
    await rm(privateDir, { recursive: true, force: true });
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
