// The process around the app (src/service.ts), on real processes (`node dist/main.js serve`):
// - a start that fails after the database is open (the port is taken) exits 2 after closing what it
//   opened, the embedded PostgreSQL it started included: no orphan server is left behind;
// - a SIGTERM during start-up stops the start, closes what it opened and exits 0;
// - a SIGTERM with a half-sent request open does not wait for it: the request in flight is answered,
//   the process exits 0 without running into the grace period;
// - a SIGHUP (a closed terminal) stops the service and its embedded PostgreSQL, and a SIGKILL's
//   orphaned PostgreSQL is stopped by the next start, which serves.
// Every wait is bounded: a process that hangs fails the test, it does not hold the run.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentToken, SECRET } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import {
  alive,
  callJson,
  CLI,
  ensureBuilt,
  eventually,
  ROOT,
  serverEnv,
  startServer,
  type ServerProcess,
} from '../helpers/process.js';

interface Started {
  proc: ChildProcess;
  output(): string;
  /** The exit code once the process has exited; rejects (failing the test) after ms. */
  exited(ms: number): Promise<number | null>;
}

/** `node dist/main.js serve`, without waiting for it to serve. */
function spawnServe(env: Record<string, string>): Started {
  const proc = spawn(process.execPath, [CLI, 'serve'], {
    cwd: ROOT,
    env: serverEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exit = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  spawned.push(proc);
  return {
    proc,
    output: () => out,
    exited: (ms) =>
      Promise.race([
        exit,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`the process did not exit within ${ms} ms:\n${out}`)), ms).unref(),
        ),
      ]),
  };
}

/** The pid of a PostgreSQL server running on this data directory, or null (no postmaster.pid, or its process is gone). */
async function postgresRunningIn(dataDir: string): Promise<number | null> {
  const text = await readFile(join(dataDir, 'postmaster.pid'), 'utf8').catch(() => null);
  if (text === null) return null;
  const pid = Number(text.split('\n')[0]);
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

const spawned: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
let dataDir: string;
let db: TestDatabase;

beforeAll(async () => {
  await ensureBuilt();
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-lifecycle-'));
  // As root the embedded server runs as the OS user `postgres`, which must reach DATA_DIR/pg.
  await chmod(dataDir, 0o755);
}, 180_000);

afterAll(async () => {
  for (const proc of spawned) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  // A server a failed test left running on the test's data directory is stopped here.
  const orphan = dataDir ? await postgresRunningIn(join(dataDir, 'pg')) : null;
  if (orphan !== null) process.kill(orphan, 'SIGINT');
  for (const cleanup of cleanups) await cleanup();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** A TCP listener on a free port (so the port is taken), or one that accepts and never answers. */
async function listener(
  onConnection: (socket: Socket) => void = () => undefined,
): Promise<{ server: Server; port: number }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { server, port: (server.address() as { port: number }).port };
}

describe('start-up', () => {
  it('the port is taken: exits 2 after stopping the embedded PostgreSQL it started (no orphan)', async () => {
    const { port } = await listener();
    const s = spawnServe({ PORT: String(port), DATA_DIR: dataDir, JWT_SECRET: SECRET });
    const code = await s.exited(120_000);
    expect(s.output()).toMatch(/started the embedded PostgreSQL/); // the database was open when listen failed
    expect(s.output()).toMatch(/gatehouse: cannot serve: listen EADDRINUSE/);
    expect(s.output()).not.toMatch(/gatehouse is serving/);
    expect(code, s.output()).toBe(2);
    expect(await postgresRunningIn(join(dataDir, 'pg'))).toBeNull();
  }, 150_000);

  it('a DATA_DIR where the development secret cannot be kept: exits 2 saying so', async () => {
    const file = join(dataDir, 'not-a-directory');
    await writeFile(file, '');
    const s = spawnServe({ PORT: '0', DATA_DIR: join(file, 'data'), DATABASE_URL: db.url });
    const code = await s.exited(30_000);
    expect(s.output()).toMatch(/gatehouse: cannot serve: the development JWT secret cannot be kept under .*ENOTDIR/);
    expect(code, s.output()).toBe(2);
  }, 60_000);

  it('SIGTERM while the embedded PostgreSQL starts: it is stopped, the process exits 0', async () => {
    const s = spawnServe({ PORT: '0', DATA_DIR: dataDir, JWT_SECRET: SECRET });
    // postmaster.pid appears as the server starts, before gatehouse can serve. Whichever step the
    // signal lands in, the server must be stopped; the next test pins the start-up path itself.
    await eventually(
      'the embedded server to start',
      60_000,
      async () => ((await postgresRunningIn(join(dataDir, 'pg'))) !== null ? true : undefined),
      10,
    );
    s.proc.kill('SIGTERM');
    const code = await s.exited(30_000);
    expect(code, s.output()).toBe(0);
    expect(await postgresRunningIn(join(dataDir, 'pg'))).toBeNull();
  }, 120_000);

  it('SIGTERM while the migrations wait for the database: the start stops, nothing is served, exit 0', async () => {
    // A "database" that accepts connections and never answers: the start waits in the migrations.
    let reached!: () => void;
    const waiting = new Promise<void>((resolve) => (reached = resolve));
    const { port: dbPort } = await listener(() => reached());
    const s = spawnServe({
      PORT: '0',
      DATABASE_URL: `postgres://u:p@127.0.0.1:${dbPort}/gatehouse`,
      DATA_DIR: dataDir,
      JWT_SECRET: SECRET,
    });
    await waiting;
    s.proc.kill('SIGTERM');
    const code = await s.exited(30_000);
    expect(code, s.output()).toBe(0);
    expect(s.output()).toMatch(/shutting down: interrupting the start-up/);
    expect(s.output()).not.toMatch(/gatehouse is serving/);
    expect(s.output()).toMatch(/"msg":"stopped"/);
  }, 60_000);
});

describe('the environment sets the connection limits and the policy reader roles (the service → the app)', () => {
  let s: ServerProcess;
  beforeAll(async () => {
    s = await startServer({
      DATABASE_URL: db.url,
      JWT_SECRET: SECRET,
      DATA_DIR: dataDir,
      HEADERS_TIMEOUT: '1s',
      REQUEST_TIMEOUT: '2s',
      MAX_CONNECTIONS: '2',
      POLICY_READER_ROLE: 'auditor, policy-author',
    });
    cleanups.push(() => s.kill());
  }, 60_000);
  const open = async (): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> => {
    const socket = connect(s.port, '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8').on('data', (c: string) => (text += c));
    socket.on('error', () => undefined); // a reset is the server closing it
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    cleanups.push(async () => void socket.destroy());
    return { socket, received: () => text, closed };
  };
  /** Fails the test if the server has not closed the connection within ms (far above the timeouts set). */
  const closedWithin = (closed: Promise<void>, ms: number): Promise<void> =>
    Promise.race([
      closed,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`not closed by the server within ${ms} ms`)), ms).unref(),
      ),
    ]);

  // First, while the server holds no other connection.
  it('MAX_CONNECTIONS: a third connection is closed unanswered while two are open', async () => {
    const ask = async (c: Awaited<ReturnType<typeof open>>): Promise<void> => {
      const before = c.received().length;
      c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await eventually(
        'an answer',
        15_000,
        async () => (c.received().slice(before).includes('{"status":"ok"}') ? true : undefined),
        10,
      );
    };
    const a = await open();
    const b = await open();
    await ask(a);
    await ask(b);
    const third = await open();
    third.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await closedWithin(third.closed, 15_000);
    expect(third.received()).toBe('');
    await ask(a);
    // Once the server has seen both go, it accepts connections again (and the next tests have room).
    a.socket.destroy();
    b.socket.destroy();
    await eventually(
      'a connection accepted again',
      15_000,
      async () => {
        const c = await open();
        c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        await closedWithin(c.closed, 15_000);
        return c.received().startsWith('HTTP/1.1 200 ') ? true : undefined;
      },
      20,
    );
  }, 30_000);

  it('HEADERS_TIMEOUT: headers sent a byte at a time are cut off', async () => {
    const slow = await open();
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const drip = setInterval(() => slow.socket.writable && slow.socket.write('a'), 100);
    try {
      await closedWithin(slow.closed, 15_000);
    } finally {
      clearInterval(drip);
    }
    expect(slow.received()).toMatch(/^HTTP\/1\.1 400 [\s\S]*the request was not received in time/);
  }, 30_000);

  it('POLICY_READER_ROLE: only the roles it lists read /policies', async () => {
    const asked = async (roles: string[]): Promise<string> => {
      const c = await open();
      c.socket.write(
        `GET /policies HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${agentToken('reader', { roles })}\r\n\r\n`,
      );
      await closedWithin(c.closed, 15_000);
      return c.received();
    };
    expect(await asked(['approver', 'admin'])).toMatch(
      /^HTTP\/1\.1 403 [\s\S]*needs one of the roles \\"auditor\\", \\"policy-author\\"/,
    );
    expect(await asked(['policy-author'])).toMatch(/^HTTP\/1\.1 200 [\s\S]*"path":"payments\.yaml"/);
  }, 30_000);

  it('a HEADERS_TIMEOUT longer than REQUEST_TIMEOUT refuses to start (exit 2), naming both', async () => {
    const bad = spawnServe({
      PORT: '0',
      DATABASE_URL: db.url,
      JWT_SECRET: SECRET,
      DATA_DIR: dataDir,
      HEADERS_TIMEOUT: '20s',
      REQUEST_TIMEOUT: '15s',
    });
    expect(await bad.exited(30_000), bad.output()).toBe(2);
    expect(bad.output()).toMatch(/HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT/);
  }, 60_000);
});

// The embedded PostgreSQL never outlives the Gatehouse that started it for longer than the next start:
// a hang-up (the terminal of a foreground `npm start` closed) stops the service as SIGTERM does, the
// database with it; a SIGKILL cannot be caught, so the next start stops the server it left behind.
describe('hang-ups and kills: the next start on the same DATA_DIR serves', () => {
  /** A DATA_DIR of the test's own (the `postgres` user must reach DATA_DIR/pg when run as root). */
  const freshDataDir = async (): Promise<string> => {
    const dir = await mkdtemp(join(dataDir, 'own-'));
    await chmod(dir, 0o755);
    cleanups.push(async () => {
      const left = await postgresRunningIn(join(dir, 'pg'));
      if (left !== null) process.kill(left, 'SIGINT');
    });
    return dir;
  };
  const serveOn = async (dir: string): Promise<ServerProcess> => {
    const s = await startServer({ DATA_DIR: dir, JWT_SECRET: SECRET }, 90_000);
    cleanups.push(() => s.kill());
    return s;
  };

  it('SIGHUP stops like SIGTERM: exit 0, the embedded PostgreSQL stopped; the next start serves', async () => {
    const dir = await freshDataDir();
    const first = await serveOn(dir);
    expect(await postgresRunningIn(join(dir, 'pg'))).not.toBeNull();
    first.proc.kill('SIGHUP');
    expect(await first.exited(30_000), first.stdout()).toEqual({ code: 0, signal: null });
    expect(first.stdout()).toMatch(/"signal":"SIGHUP".*"msg":"shutting down: finishing in-flight requests"/);
    expect(first.stdout()).toMatch(/"msg":"stopped"/);
    expect(await postgresRunningIn(join(dir, 'pg'))).toBeNull();

    const next = await serveOn(dir);
    expect((await callJson(next.base, 'GET', '/readyz', null)).body).toMatchObject({ status: 'ready', database: 'ok' });
    expect(next.stdout()).not.toMatch(/left behind/);
    next.proc.kill('SIGTERM');
    expect(await next.exited(30_000)).toEqual({ code: 0, signal: null });
  }, 180_000);

  it("a terminal's hang-up reaches the whole foreground job (npm's shell and the server), more than once: a clean stop, never cut short", async () => {
    const dir = await freshDataDir();
    // A process group of its own, as a terminal's foreground job is; the shell stays the server's
    // parent (the `; true` keeps it from exec-ing node), as npm's does.
    const job = spawn('sh', ['-c', '"$0" "$1" serve; true', process.execPath, CLI], {
      cwd: ROOT,
      env: serverEnv({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', DATA_DIR: dir, JWT_SECRET: SECRET }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    spawned.push(job);
    let out = '';
    let err = '';
    job.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    job.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const server = await eventually('the server to serve', 90_000, async () => {
      const pid = /PID (\d+):/.exec(err)?.[1];
      return out.includes('gatehouse is serving') && pid !== undefined ? Number(pid) : undefined;
    });
    cleanups.push(async () => {
      if (alive(server)) process.kill(server, 'SIGKILL');
    });
    expect(server).not.toBe(job.pid);
    process.kill(-job.pid!, 'SIGHUP'); // the shell passing the hang-up on to its jobs
    await eventually('the shutdown to begin', 10_000, async () => (out.includes('shutting down') ? true : undefined));
    if (alive(server)) process.kill(server, 'SIGHUP'); // the kernel's, as the shell exits
    await eventually('the server to exit', 30_000, async () => (alive(server) ? undefined : true));
    expect(out).toMatch(/"msg":"stopped"/);
    expect(out).not.toMatch(/exiting now/);
    expect(await postgresRunningIn(join(dir, 'pg'))).toBeNull();
  }, 180_000);

  it('SIGKILL leaves the embedded PostgreSQL behind: the next start stops it and serves; a start beside a live one is still refused', async () => {
    const dir = await freshDataDir();
    const killed = await serveOn(dir);
    const orphan = await postgresRunningIn(join(dir, 'pg'));
    expect(orphan).not.toBeNull();
    await killed.kill(); // SIGKILL: nothing runs in the process any more, no handler, no `exit` event
    expect(await postgresRunningIn(join(dir, 'pg'))).toBe(orphan); // the server outlived it

    const next = await serveOn(dir);
    expect(next.stdout()).toContain(`"pid":${orphan}`);
    expect(next.stdout()).toMatch(
      /stopped the embedded PostgreSQL that a Gatehouse which is no longer running left behind/,
    );
    expect(alive(orphan!)).toBe(false);
    const serving = await postgresRunningIn(join(dir, 'pg'));
    expect(serving).not.toBeNull();
    expect(serving).not.toBe(orphan);
    expect((await callJson(next.base, 'GET', '/readyz', null)).body).toMatchObject({ status: 'ready', database: 'ok' });

    // A live Gatehouse's server is no orphan: a second start beside it is refused, and it keeps serving.
    const beside = spawnServe({ PORT: '0', DATA_DIR: dir, JWT_SECRET: SECRET });
    expect(await beside.exited(60_000), beside.output()).toBe(2);
    expect(beside.output()).toMatch(
      new RegExp(
        `in use by PostgreSQL process ${serving}, started by process ${next.pid} .*another Gatehouse is running`,
      ),
    );
    expect(await postgresRunningIn(join(dir, 'pg'))).toBe(serving);
    expect((await callJson(next.base, 'GET', '/readyz', null)).body).toMatchObject({ status: 'ready', database: 'ok' });
    next.proc.kill('SIGTERM');
    expect(await next.exited(30_000)).toEqual({ code: 0, signal: null });
    expect(await postgresRunningIn(join(dir, 'pg'))).toBeNull();
  }, 180_000);
});

describe('shutting down', () => {
  let s: ServerProcess;
  beforeAll(async () => {
    // A grace period far above the bounded wait below: waiting for it would fail the test.
    s = await startServer({ DATABASE_URL: db.url, JWT_SECRET: SECRET, DATA_DIR: dataDir, SHUTDOWN_GRACE_MS: '120000' });
    cleanups.push(() => s.kill());
  }, 60_000);

  it('a half-sent request does not hold SIGTERM; the request in flight is answered; exit 0', async () => {
    const open = async (): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> => {
      const socket = connect(s.port, '127.0.0.1');
      let text = '';
      socket.setEncoding('utf8').on('data', (c: string) => (text += c));
      socket.on('error', () => undefined); // a reset is the server closing it
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      cleanups.push(async () => void socket.destroy());
      return { socket, received: () => text, closed };
    };
    const partial = await open();
    partial.socket.write('POST /decide HTTP/1.1\r\nHost: x\r\nContent-Ty');
    const busy = await open();
    const body = JSON.stringify({ tool: 'lookup_order', args: { order: 'A1' } });
    busy.socket.write(
      `POST /decide HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${agentToken()}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    // Time for the server to read both (a bounded pause, not a measurement).
    await new Promise((resolve) => setTimeout(resolve, 200));

    s.proc.kill('SIGTERM');
    await partial.closed; // closed by the server at once, with no answer
    expect(partial.received()).toBe('');
    busy.socket.write(body.slice(10));
    await busy.closed; // answered, then closed: the client need not hang up
    expect(busy.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*"decision":"allow"/);
    expect(await s.exited(20_000), s.stdout()).toEqual({ code: 0, signal: null });
    expect(s.stdout()).not.toMatch(/grace period exceeded/);
  }, 60_000);
});
