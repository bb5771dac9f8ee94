// Process faults, on real server processes
// (`node dist/main.js serve`) with an explicit JWT_SECRET and a fresh test database:
// - the database down at boot: serve() refuses to start (exit 2, never listening);
// - SIGTERM under load: every answer that arrives is complete and valid, no grant that answered
//   200 is lost, new connections are refused once closing, exit 0; a long-poll does not hold it up;
// - the decision log's reader gone (stdout closed): decisions go on, SIGTERM still exits 0;
// - SIGKILL mid-transaction: the dead server's transaction never commits, and a second instance
//   grants the approval once the dead backend is gone; a terminated backend never crashes a server;
// - reload storms: 100 reload signals (SIGUSR2) while the policy file is rewritten in place and a client decides
//   continuously: every decision is exactly version A's or version B's, and the process stays up.
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildPolicySet } from '../../src/policy/load.js';
import { agentToken, approverToken, SECRET } from '../helpers/app.js';
import { createTestDatabase, startPrivatePostgres, type TestDatabase } from '../helpers/db.js';
import {
  callJson,
  CLI,
  ensureBuilt,
  eventually,
  freeTcpPort,
  policyDir,
  ROOT,
  serverEnv,
  startServer,
  type JsonResponse,
  type ServerProcess,
} from '../helpers/process.js';

const POLICY = `policy: process
version: "1"
tools:
  lookup: {kind: read_only}
  refund: {kind: remote_mutation}
  wipe: {kind: destructive}
rules:
  - id: lookups
    tools: [lookup]
    allow: true
  - id: refunds
    tools: [refund]
    allow: true
    confirm: true
  - id: no-wipe
    tools: [wipe]
    allow: false
`;
const WANT: Record<string, { status: number; decision: string; rule: string }> = {
  lookup: { status: 200, decision: 'allow', rule: 'lookups' },
  refund: { status: 403, decision: 'require_approval', rule: 'refunds' },
  wipe: { status: 403, decision: 'deny', rule: 'no-wipe' },
};

let db: TestDatabase;
let dir: string;
let dataDir: string;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  [db, dir, dataDir] = await Promise.all([
    createTestDatabase(),
    policyDir({ 'process.yaml': POLICY }),
    mkdtemp(join(tmpdir(), 'gatehouse-rel-data-')),
    ensureBuilt(),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  await db?.drop();
  for (const d of [dir, dataDir]) if (d) await rm(d, { recursive: true, force: true });
});

function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: db.url, JWT_SECRET: SECRET, POLICY_DIR: dir, DATA_DIR: dataDir, ...extra };
}

async function serve(extra: Record<string, string> = {}): Promise<ServerProcess> {
  const s = await startServer(baseEnv(extra));
  servers.push(s);
  return s;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A decision answer: complete JSON, exactly the policy's answer for the tool, or 503 while closing. */
function expectValidDecision(res: JsonResponse, tool: string, closingOk: boolean): void {
  if (closingOk && res.status === 503) {
    // The drain answer (src/http/app.ts): complete problem+json, retry elsewhere, nothing allowed.
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.body).toMatchObject({ status: 503, code: 'unavailable' });
    expect(res.body).not.toHaveProperty('decision');
    return;
  }
  const want = WANT[tool]!;
  expect(res.status, JSON.stringify(res.body)).toBe(want.status);
  expect(res.body).toMatchObject({
    decision: want.decision,
    rule: want.rule,
    policies: [expect.objectContaining({ policy: 'process' })],
  });
  expect(typeof res.body.decision_id).toBe('string');
  expect(typeof res.body.message).toBe('string');
}

interface Row {
  status: string;
  events: string[];
}
async function stateOf(id: string): Promise<Row> {
  const [row] = await db.sql<{ status: string }[]>`select status from approvals where id = ${id}`;
  const events = await db.sql<
    { to_status: string }[]
  >`select to_status from approval_events where approval_id = ${id} order by id`;
  return { status: row!.status, events: events.map((e) => e.to_status) };
}

async function createApproval(s: ServerProcess, sub: string, order: string): Promise<string> {
  const res = await callJson(s.base, 'POST', '/approvals', agentToken(sub), { tool: 'refund', args: { order } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/** Holds a FOR UPDATE lock on the approval rows from the test's own session until release(). */
async function lockRows(ids: string[]): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const holding = new Promise<void>((resolve) => (locked = resolve));
  const tx = db.sql.begin(async (t) => {
    await t`select id from approvals where id in ${t(ids)} for update`;
    locked();
    await released;
  });
  tx.catch(() => undefined); // a test that fails before release() must not leave an unhandled rejection
  await holding;
  return {
    async release() {
      release();
      await tx;
    },
  };
}

/** Backends of this database (other than the test's) waiting on a lock. */
async function lockWaiters(): Promise<number[]> {
  const rows = await db.sql<{ pid: number }[]>`
    select pid from pg_stat_activity
     where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`;
  return rows.map((r) => r.pid);
}

/**
 * POST `path` over a raw keep-alive socket, sending the headers and half the body now. finish()
 * sends the rest and resolves with the complete response (read by Content-Length); the client then
 * leaves the connection open, as a keep-alive client does, and `closedByServer` tells when the
 * server hung up.
 */
async function slowRequest(
  port: number,
  path: string,
  token: string,
  body: string,
): Promise<{
  finish(): Promise<{ status: number; body: string; text: string }>;
  closedByServer: Promise<void>;
}> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => undefined);
  let received = Buffer.alloc(0);
  let onData = (): void => {};
  socket.on('data', (c: Buffer) => {
    received = Buffer.concat([received, c]);
    onData();
  });
  const closedByServer = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const half = Math.floor(body.length / 2);
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, half)}`,
  );
  // Long enough for the server to have parsed the headers and routed the request.
  await sleep(100);
  return {
    closedByServer,
    async finish() {
      socket.write(body.slice(half));
      const complete = (): { status: number; body: string; text: string } | null => {
        const text = received.toString('utf8');
        const split = text.indexOf('\r\n\r\n');
        if (split < 0) return null;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, split))?.[1] ?? NaN);
        const rest = received.subarray(Buffer.byteLength(text.slice(0, split + 4)));
        if (!(rest.length >= length)) return null;
        return {
          status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
          body: rest.subarray(0, length).toString('utf8'),
          text,
        };
      };
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no complete response: ${received.toString('utf8')}`)), 10_000);
        onData = () => {
          const r = complete();
          if (r) {
            clearTimeout(timer);
            resolve(r);
          }
        };
        onData();
      });
    },
  };
}

/** Resolves true when a new TCP connection to the port is refused, false when it is accepted. */
function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

afterEach(async () => {
  // No test leaves a server behind for the next.
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

// ---------------------------------------------------------------------------------------------------

describe('process faults', () => {
  it('the database down at boot: /decide is served, approvals are 503 until the database is back, then work without a restart', async () => {
    const pg = await startPrivatePostgres();
    try {
      await pg.stop();
      const s = await startServer(baseEnv({ DATABASE_URL: pg.url, DB_DEADLINE_MS: '1000' }));
      servers.push(s);
      expect(s.stdout()).toMatch(/the database is unreachable/);
      expect(s.stdout() + s.stderr()).not.toContain(new URL(pg.url).password); // the password is never printed
      expectValidDecision(await callJson(s.base, 'POST', '/decide', agentToken(), { tool: 'lookup' }), 'lookup', false);
      expectValidDecision(await callJson(s.base, 'POST', '/decide', agentToken(), { tool: 'refund' }), 'refund', false);
      const refund = { tool: 'refund', args: { order: 'DOWN' } };
      const asked = await callJson(s.base, 'POST', '/approvals', agentToken('down-1'), refund);
      expect(asked.status).toBe(503);
      expect(asked.headers.get('retry-after')).not.toBeNull();
      expect(asked.headers.get('content-type')).toContain('application/problem+json');
      const redeem = await callJson(s.base, 'POST', '/decide', agentToken('down-1'), {
        ...refund,
        approval_id: '01a229a0-b317-7358-a43d-8cad50a73af6',
      });
      expect(redeem.status).toBe(503);
      const ready = await callJson(s.base, 'GET', '/readyz', null);
      expect(ready.status).toBe(503);
      expect(ready.body.database).toBe('unavailable');

      await pg.start();
      const created = await eventually(
        'approvals to work once the database is back',
        20_000,
        async () => {
          const res = await callJson(s.base, 'POST', '/approvals', agentToken('down-1'), refund);
          return res.status === 201 ? res : undefined;
        },
        250,
      );
      expect(created.body.status).toBe('pending');
      expect((await callJson(s.base, 'GET', '/readyz', null)).status).toBe(200);
      expect(s.stdout()).toMatch(/the database is reachable again/);
    } finally {
      await pg.dispose();
    }
  });

  it('a broken migration set refuses to start (exit 2, a clear message, never listening)', async () => {
    const db = await createTestDatabase();
    try {
      // An applied migration whose checksum no longer matches the file: a deployment error, not an outage.
      await db.sql`update schema_migrations set checksum = 'edited' where version = 1`;
      const port = await freeTcpPort();
      const proc = spawn(process.execPath, [CLI, 'serve'], {
        cwd: ROOT,
        env: serverEnv(baseEnv({ DATABASE_URL: db.url, PORT: String(port), HOST: '127.0.0.1' })),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
      proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
      expect(code, out).toBe(2);
      expect(out).toMatch(/the database is not usable/);
      expect(out).not.toMatch(/gatehouse is serving/);
      expect(await connectionRefused(port)).toBe(true);
    } finally {
      await db.drop();
    }
  });

  it('a second serve on the same DATA_DIR exits 2, naming the data directory and the process using it', async () => {
    const shared = await mkdtemp(join(tmpdir(), 'gatehouse-rel-shared-'));
    const env = (): Record<string, string> => {
      const e = baseEnv({ DATA_DIR: shared });
      delete e.DATABASE_URL;
      return e;
    };
    try {
      const first = await startServer(env()); // serve() would add DATABASE_URL back
      servers.push(first);
      const second = spawn(process.execPath, [CLI, 'serve'], {
        cwd: ROOT,
        env: serverEnv({ ...env(), PORT: String(await freeTcpPort()) }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      second.stdout.on('data', (c: Buffer) => (out += c.toString()));
      second.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
      expect(code, out).toBe(2);
      expect(out).toContain(join(shared, 'pg'));
      expect(out).toMatch(new RegExp(`in use by PostgreSQL process \\d+, started by process ${first.pid}`));
      // The first one is untouched and still serving.
      expect((await callJson(first.base, 'GET', '/healthz', null)).status).toBe(200);
      first.proc.kill('SIGTERM');
      expect((await first.exited(20_000)).code).toBe(0);
    } finally {
      // As root the cluster was made where the postgres user can reach it, DATA_DIR/pg linking to it.
      const cluster = await realpath(join(shared, 'pg')).catch(() => null);
      if (cluster !== null) await rm(cluster, { recursive: true, force: true });
      await rm(shared, { recursive: true, force: true });
    }
  }, 60_000);

  it('a failed start with the embedded database exits non-zero', async () => {
    // A cluster directory gatehouse did not create (no password file): startEmbeddedPostgres refuses it.
    const broken = await mkdtemp(join(tmpdir(), 'gatehouse-rel-broken-'));
    await chmod(broken, 0o755); // reachable as the postgres user, so the cluster itself is what is refused
    try {
      await mkdir(join(broken, 'pg'));
      await writeFile(join(broken, 'pg', 'PG_VERSION'), '18\n');
      const env = baseEnv({ DATA_DIR: broken, PORT: String(await freeTcpPort()) });
      delete env.DATABASE_URL;
      const proc = spawn(process.execPath, [CLI, 'serve'], {
        cwd: ROOT,
        env: serverEnv(env),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
      proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
      expect(out).toMatch(/no gatehouse\.password/);
      expect(out).not.toMatch(/gatehouse is serving/);
      expect(code, out).not.toBe(0);
    } finally {
      await rm(broken, { recursive: true, force: true });
    }
  });

  it('SIGTERM under load: complete answers only, no 200 grant lost, new connections refused while closing, exit 0', async () => {
    const s = await serve({ DB_DEADLINE_MS: '5000' });
    const sub = `load-${Date.now()}`;
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => createApproval(s, sub, `L${i}`)));
    const held = await createApproval(s, sub, 'HELD');

    // 200 concurrent clients, each deciding in a loop (one of its first calls a grant, for 20 of
    // them) until the server stops answering: at SIGTERM, requests are in flight on every connection.
    let sigtermAt = Infinity;
    let answered = 0;
    type Outcome = { what: string; tool?: string; id?: string; res: JsonResponse | null; error: unknown; at: number };
    const outcomes: Outcome[] = [];
    const tools = Object.keys(WANT);
    const client = async (w: number): Promise<void> => {
      for (let i = 0; ; i++) {
        const grantNow = i === 2 && w < ids.length;
        const tool = tools[(w + i) % tools.length]!;
        const extra = grantNow ? { id: ids[w]! } : { tool };
        const call = grantNow
          ? callJson(s.base, 'POST', `/approvals/${ids[w]}/grant`, approverToken(), { note: `g${w}` })
          : callJson(s.base, 'POST', '/decide', agentToken(sub), { tool, args: { w, i } });
        const outcome: Outcome = await call.then(
          (res) => ({ what: grantNow ? 'grant' : 'decide', ...extra, res, error: null, at: performance.now() }),
          (error: unknown) => ({
            what: grantNow ? 'grant' : 'decide',
            ...extra,
            res: null,
            error,
            at: performance.now(),
          }),
        );
        outcomes.push(outcome);
        if (outcome.res !== null) answered++;
        if (outcome.res === null || outcome.res.status === 503 || performance.now() > sigtermAt + 5_000) return;
      }
    };
    const clients = Array.from({ length: 200 }, (_, w) => client(w));
    await eventually('the first answers', 10_000, async () => (answered >= 400 ? true : undefined), 1);

    // A grant whose body is still arriving on a keep-alive connection: accepted before SIGTERM, it
    // keeps the server closing until the test sends the rest (a window to try new connections).
    const slow = await slowRequest(
      s.port,
      `/approvals/${held}/grant`,
      approverToken(),
      JSON.stringify({ note: 'sent across SIGTERM' }),
    );
    sigtermAt = performance.now();
    s.proc.kill('SIGTERM');

    // While the held grant keeps the process closing: new connections are refused.
    const refusedWhileAlive = await eventually(
      'a refused connection while closing',
      5_000,
      async () => {
        const refused = await connectionRefused(s.port);
        return refused ? s.proc.exitCode === null && s.proc.signalCode === null : undefined;
      },
      10,
    );
    expect(refusedWhileAlive).toBe(true);
    const heldOutcome = await slow.finish();
    // A keep-alive connection whose request was in flight at SIGTERM is closed by the server once
    // answered (the client never hangs up): it must not hold the shutdown until the grace period.
    await slow.closedByServer;

    await Promise.all(clients);
    const exit = await s.exited(10_000);
    expect(
      exit,
      `${s.stderr()}\n${s
        .stdout()
        .split('\n')
        .filter((l) => !l.includes('"msg":"decision"'))
        .slice(-15)
        .join('\n')}`,
    ).toEqual({ code: 0, signal: null });
    expect(s.stdout()).toMatch(/"msg":"stopped"/);

    let afterSigterm = 0;
    for (const o of outcomes) {
      if (o.res === null) {
        // Never accepted (or cut before a byte of an answer): a network error, not a wrong answer.
        expect(String((o.error as Error).cause ?? o.error)).toMatch(
          /ECONNREFUSED|ECONNRESET|socket|other side closed|terminated|closed/i,
        );
        continue;
      }
      if (o.at > sigtermAt && o.res.status !== 503) afterSigterm++;
      if (o.what === 'decide') expectValidDecision(o.res, o.tool!, true);
      else expect([200, 503]).toContain(o.res.status);
    }
    // Requests in flight when SIGTERM arrived were answered in full.
    expect(afterSigterm, 'normal answers completed after SIGTERM').toBeGreaterThan(0);
    expect(outcomes.filter((o) => o.res !== null).length).toBeGreaterThan(400);

    // No grant that answered 200 is lost; nothing is half-done.
    for (const o of outcomes.filter((x) => x.what === 'grant')) {
      const state = await stateOf(o.id!);
      if (o.res?.status === 200) expect(state).toEqual({ status: 'granted', events: ['pending', 'granted'] });
      else
        expect([
          { status: 'pending', events: ['pending'] },
          { status: 'granted', events: ['pending', 'granted'] },
        ]).toContainEqual(state);
    }
    // The grant in flight across SIGTERM was answered in full, and its 200 is durable.
    expect(heldOutcome.status, heldOutcome.text).toBe(200);
    expect(JSON.parse(heldOutcome.body)).toMatchObject({
      id: held,
      status: 'granted',
      decision_note: 'sent across SIGTERM',
    });
    expect(await stateOf(held)).toEqual({ status: 'granted', events: ['pending', 'granted'] });
  });

  it('SIGTERM with a long-poll in flight: the poll is answered at once and the process exits 0 promptly', async () => {
    const s = await serve({ SHUTDOWN_GRACE_MS: '8000' });
    const sub = `poll-${Date.now()}`;
    const id = await createApproval(s, sub, 'POLL');
    const started = performance.now();
    const poll = callJson(s.base, 'GET', `/approvals/${id}?wait=30`, agentToken(sub), undefined, 40_000);
    await sleep(300);
    s.proc.kill('SIGTERM');
    const res = await poll;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'pending' });
    const exit = await s.exited(6_000);
    expect(exit, s.stderr()).toEqual({ code: 0, signal: null });
    expect(performance.now() - started).toBeLessThan(6_000);
  });

  it('POLICY_ENV unset outside production, with files that declare environments: serves dev and says so', async () => {
    const envDir = await policyDir({
      'envs.yaml': 'policy: envs\nenvironments: [dev, prod]\ndefault: {dev: allow, prod: deny}\n',
    });
    try {
      const s = await serve({ POLICY_DIR: envDir });
      const line = s
        .stdout()
        .split('\n')
        .find((l) => l.includes('POLICY_ENV is not set'));
      expect(line, s.stdout()).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ level: 40, env: 'dev' });
      const res = await callJson(s.base, 'POST', '/decide', agentToken(), { tool: 'anything', args: {} });
      expect(res.body).toMatchObject({ decision: 'allow', rule: 'envs#default' });
      s.proc.kill('SIGTERM');
      expect(await s.exited(8_000)).toEqual({ code: 0, signal: null });
    } finally {
      await rm(envDir, { recursive: true, force: true });
    }
  });

  it('the decision log reader goes away (stdout closed: EPIPE): /decide keeps answering, SIGTERM still exits 0', async () => {
    // The decision log is best effort: losing its reader never stops decisions.
    const s = await serve();
    const before = s.stdout().length;
    s.proc.stdout!.destroy(); // the parent's end of the pipe: every later write of the child fails
    for (let i = 0; i < 200; i++) {
      const tool = ['lookup', 'refund', 'wipe'][i % 3]!;
      expectValidDecision(await callJson(s.base, 'POST', '/decide', agentToken(), { tool, args: {} }), tool, false);
    }
    expect((await callJson(s.base, 'GET', '/healthz', null)).status).toBe(200);
    s.proc.kill('SIGTERM');
    expect(await s.exited(8_000), s.stderr()).toEqual({ code: 0, signal: null });
    expect(s.stdout().length).toBe(before); // nothing more was read: the reader was really gone
    expect(s.stderr()).not.toMatch(/EPIPE|Error/);
  });

  it('SIGKILL mid-transaction: nothing commits; a second instance grants once the dead backend is gone, and survives a terminated backend', async () => {
    const first = await serve();
    const sub = `kill-${Date.now()}`;
    const id = await createApproval(first, sub, 'KILL');
    const lock = await lockRows([id]);
    const dying = callJson(first.base, 'POST', `/approvals/${id}/grant`, approverToken(), { note: 'never' }).catch(
      (error: unknown) => error,
    );
    const [deadBackend] = await eventually('the grant to wait on the lock', 5_000, async () => {
      const pids = await lockWaiters();
      return pids.length > 0 ? pids : undefined;
    });
    first.proc.kill('SIGKILL');
    expect(await first.exited(5_000)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await dying).toBeInstanceOf(Error); // the client saw a broken connection, not an answer
    await lock.release();

    // The dead client's backend notices its socket is gone once it can run, and rolls back.
    await eventually('the dead backend to exit', 15_000, async () => {
      const [row] = await db.sql<
        { n: number }[]
      >`select count(*)::int as n from pg_stat_activity where pid = ${deadBackend!}`;
      return row!.n === 0 ? true : undefined;
    });
    expect(await stateOf(id)).toEqual({ status: 'pending', events: ['pending'] });

    const second = await serve();
    // Regression: a backend terminated under a waiting grant used to crash the process (postgres.js).
    const other = await createApproval(second, sub, 'TERMINATED');
    const lock2 = await lockRows([other]);
    const waiting = callJson(second.base, 'POST', `/approvals/${other}/grant`, approverToken(), {});
    const [victim] = await eventually('the second grant to wait', 5_000, async () => {
      const pids = await lockWaiters();
      return pids.length > 0 ? pids : undefined;
    });
    await db.sql`select pg_terminate_backend(${victim!})`;
    const cut = await waiting;
    expect(cut.status).toBe(503);
    expect(cut.headers.get('retry-after')).toMatch(/^\d+$/);
    await lock2.release();
    await sleep(200);
    expect(second.proc.exitCode).toBeNull();
    expectValidDecision(
      await callJson(second.base, 'POST', '/decide', agentToken(sub), { tool: 'wipe' }),
      'wipe',
      false,
    );

    const granted = await eventually('the second instance to grant', 10_000, async () => {
      const res = await callJson(second.base, 'POST', `/approvals/${id}/grant`, approverToken(), { note: 'second' });
      return res.status === 503 ? undefined : res;
    });
    expect(granted.status, JSON.stringify(granted.body)).toBe(200);
    expect(await stateOf(id)).toEqual({ status: 'granted', events: ['pending', 'granted'] });
    const redeemed = await callJson(second.base, 'POST', '/decide', agentToken(sub), {
      tool: 'refund',
      args: { order: 'KILL' },
      approval_id: id,
    });
    expect(redeemed.body).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
    second.proc.kill('SIGTERM');
    expect(await second.exited(10_000)).toEqual({ code: 0, signal: null });
  });

  it('reload storm: 100 SIGUSR2s while the file is rewritten in place; every decision is exactly version A or B, the process stays up', async () => {
    const stormDir = await mkdtemp(join(tmpdir(), 'gatehouse-rel-storm-'));
    try {
      const version = (v: 'A' | 'B'): string =>
        JSON.stringify(
          {
            policy: 'storm',
            version: v,
            tools: { t: { kind: 'read_only' }, u: { kind: 'read_only' } },
            rules: [
              { id: `${v}-t`, tools: ['t'], allow: v === 'A' },
              { id: `${v}-u`, tools: ['u'], allow: v === 'B' },
            ],
            // Padding makes each write take a while, so reloads do read half-written files.
            guards: [],
            default: 'deny',
          },
          null,
          2,
        ) + ' '.repeat(64 * 1024);
      const texts = { A: version('A'), B: version('B') };
      const digests = {
        A: buildPolicySet([{ path: 'p.json', bytes: Buffer.from(texts.A) }]).identities[0]!.digest,
        B: buildPolicySet([{ path: 'p.json', bytes: Buffer.from(texts.B) }]).identities[0]!.digest,
      };
      const expected = (v: 'A' | 'B', tool: 't' | 'u'): string => ((v === 'A') === (tool === 't') ? 'allow' : 'deny');
      const file = join(stormDir, 'p.json');
      await writeFile(file, texts.A);
      const s = await serve({ POLICY_DIR: stormDir });

      const problems: string[] = [];
      const seen = new Set<string>();
      let decisions = 0;
      let running = true;
      const check = (res: JsonResponse, tool: 't' | 'u'): void => {
        decisions++;
        const p = (res.body.policies as { version?: string; digest?: string }[] | undefined)?.[0];
        const v = p?.version as 'A' | 'B' | undefined;
        if (v !== 'A' && v !== 'B') return void problems.push(`no version: ${JSON.stringify(res.body)}`);
        seen.add(v);
        if (p!.digest !== digests[v]) problems.push(`version ${v} with digest ${p!.digest}`);
        const want = expected(v, tool);
        if (
          res.body.decision !== want ||
          res.status !== (want === 'allow' ? 200 : 403) ||
          res.body.rule !== `${v}-${tool}`
        ) {
          problems.push(`${tool} under ${v}: ${res.status} ${res.body.decision} ${res.body.rule}`);
        }
      };
      const client = async (k: number): Promise<void> => {
        for (let i = 0; running; i++) {
          const tool = (i + k) % 2 === 0 ? 't' : 'u';
          try {
            check(await callJson(s.base, 'POST', '/decide', agentToken(), { tool }), tool);
          } catch (err) {
            problems.push(`request failed: ${String(err)}`);
          }
        }
      };
      const clients = Array.from({ length: 4 }, (_, k) => client(k));

      for (let i = 0; i < 100; i++) {
        await writeFile(file, i % 2 === 0 ? texts.B : texts.A); // truncate, then write: not atomic
        s.proc.kill('SIGUSR2');
        await sleep(i % 10 === 0 ? 20 : 2);
      }
      // Settle on each version in turn; the process must get there by itself.
      for (const v of ['B', 'A'] as const) {
        await writeFile(file, texts[v]);
        s.proc.kill('SIGUSR2');
        await eventually(`version ${v} to serve`, 10_000, async () => {
          const res = await callJson(s.base, 'POST', '/decide', agentToken(), { tool: 't' });
          check(res, 't');
          return (res.body.policies as { version: string }[])[0]!.version === v ? true : undefined;
        });
      }
      running = false;
      await Promise.all(clients);

      expect(problems.slice(0, 10)).toEqual([]);
      expect(decisions).toBeGreaterThan(100);
      expect(seen).toEqual(new Set(['A', 'B']));
      expect(s.proc.exitCode).toBeNull();
      const policies = await callJson(s.base, 'GET', '/policies', approverToken()); // a policy reader
      expect(policies.body).toMatchObject({
        files: [{ policy: 'storm', version: 'A', digest: digests.A }],
        last_reload_error: null,
      });
      s.proc.kill('SIGTERM');
      expect(await s.exited(10_000)).toEqual({ code: 0, signal: null });
    } finally {
      await rm(stormDir, { recursive: true, force: true });
    }
  });
});
