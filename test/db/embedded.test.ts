// startEmbeddedPostgres beyond what the test servers already exercise (fresh start in globalSetup,
// restart with kept data in the fault tests): refusing a data directory it did not create.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
