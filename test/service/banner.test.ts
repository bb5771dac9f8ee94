// `gatehouse serve` (what npm start runs) says what is up, on stderr: the URL, /ui, /openapi.yaml and
// the server's own PID (a SIGUSR2 sent to it reloads the policies), and in development the two
// tokens, a curl to try and `node dist/main.js token --help`. stdout stays the log: JSON lines unless
// LOG_FORMAT=pretty, or by default when stdout is a terminal. Real processes (node dist/main.js serve)
// on a test database; every wait is bounded.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import {
  callJson,
  CLI,
  ensureBuilt,
  eventually,
  freeTcpPort,
  ROOT,
  serverEnv,
  startServer,
  type ServerProcess,
} from '../helpers/process.js';

let db: TestDatabase;
let dataDir: string;
const started: ServerProcess[] = [];
const others: ChildProcess[] = [];

beforeAll(async () => {
  await ensureBuilt();
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-serve-'));
}, 180_000);

afterAll(async () => {
  for (const s of started) await s.kill();
  for (const p of others) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function serve(env: Record<string, string>): Promise<ServerProcess> {
  const s = await startServer({ DATABASE_URL: db.url, DATA_DIR: dataDir, ...env });
  started.push(s);
  return s;
}

/** Stops the server and returns its stdout, once it has exited. */
async function stop(s: ServerProcess): Promise<string> {
  s.proc.kill('SIGTERM');
  expect((await s.exited(20_000)).code).toBe(0);
  return s.stdout();
}

/** Every non-empty line of stdout is a JSON object (the log), none is the banner's. */
function expectJsonLines(stdout: string): Record<string, unknown>[] {
  const lines = stdout.split('\n').filter((l) => l !== '');
  expect(lines.length).toBeGreaterThan(0);
  return lines.map((l) => {
    const parsed = JSON.parse(l) as unknown;
    expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed), l).toBe(true);
    return parsed as Record<string, unknown>;
  });
}

describe('the banner', () => {
  it('in development: on stderr, the URL, /ui, /openapi.yaml, the PID that SIGUSR2 reaches, two working tokens; stdout only JSON lines', async () => {
    const s = await serve({});
    const banner = await eventually('the banner', 10_000, async () =>
      s.stderr().includes('token --help') ? s.stderr() : undefined,
    );
    expect(banner).toContain(`Gatehouse is serving at ${s.base}\n`);
    expect(banner).toContain(`${s.base}/ui\n`);
    expect(banner).toContain(`${s.base}/openapi.yaml\n`);
    expect(banner).toContain(`PID ${s.pid}: kill -USR2 ${s.pid} reloads the policies, kill ${s.pid} stops the service`);
    expect(banner).toContain(
      `Development mode: no JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL, so a secret was generated (kept in ${join(dataDir, 'dev-jwt-secret')})`,
    );
    expect(banner).toContain(`export GATEHOUSE=${s.base}\n`);
    expect(banner).toContain('Tokens valid for 24 hours:');
    expect(banner).toMatch(/curl -s \$GATEHOUSE\/decide -H "authorization: Bearer \$AGENT_TOKEN"/);
    // The command by its path, which runs only this package (the server runs from the checkout).
    expect(banner).toContain('Tokens for other teams, agents and approvers: node dist/main.js token --help\n');
    const agent = /export AGENT_TOKEN=(\S+)\n/.exec(banner)![1]!;
    const approver = /export APPROVER_TOKEN=(\S+)\n/.exec(banner)![1]!;
    expect(
      (await callJson(s.base, 'POST', '/decide', agent, { tool: 'lookup_order', args: { order: 'A1' } })).status,
    ).toBe(200);
    expect((await callJson(s.base, 'GET', '/approvals', approver)).status).toBe(200);
    // The PID in the banner is the server's: SIGUSR2 to it reloads the policies.
    process.kill(s.pid, 'SIGUSR2');
    await eventually('the reload', 10_000, async () => (s.stdout().includes('"policies reloaded"') ? true : undefined));

    const log = expectJsonLines(await stop(s));
    expect(log.some((l) => l.msg === 'gatehouse is serving' && l.url === s.base)).toBe(true);
    expect(s.stdout()).not.toContain('AGENT_TOKEN');
  }, 60_000);

  it('with a configured key: the URL, /ui, /openapi.yaml and the PID, no development tokens', async () => {
    const s = await serve({ JWT_SECRET: SECRET });
    const banner = await eventually('the banner', 10_000, async () =>
      s.stderr().includes('kill -USR2') ? s.stderr() : undefined,
    );
    expect(banner).toContain(`Gatehouse is serving at ${s.base}\n`);
    expect(banner).toContain(`${s.base}/ui\n`);
    expect(banner).toContain(`${s.base}/openapi.yaml\n`);
    expect(banner).toContain(`PID ${s.pid}:`);
    expect(banner).not.toMatch(/Development mode|AGENT_TOKEN|APPROVER_TOKEN/);
    expectJsonLines(await stop(s));
  }, 60_000);
});

describe('LOG_FORMAT', () => {
  it('json: JSON lines on stdout, the same fields as by default', async () => {
    const s = await serve({ JWT_SECRET: SECRET, LOG_FORMAT: 'json' });
    const log = expectJsonLines(await stop(s));
    expect(log.find((l) => l.msg === 'gatehouse is serving')).toMatchObject({
      level: 30,
      service: 'gatehouse',
      url: s.base,
      env: 'dev',
    });
  }, 60_000);

  it('pretty: readable lines (level, message, fields), none of them JSON', async () => {
    const s = await serve({ JWT_SECRET: SECRET, LOG_FORMAT: 'pretty' });
    const lines = (await stop(s)).split('\n').filter((l) => l !== '');
    for (const line of lines) expect(() => JSON.parse(line), line).toThrow();
    const serving = lines.find((l) => l.includes('gatehouse is serving'));
    expect(serving).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gatehouse is serving \{.*"url":"http:\/\/127\.0\.0\.1:\d+".*\}$/,
    );
    expect(serving).not.toMatch(/\x1b\[/); // not a terminal: no colours
    expect(lines.at(-1)).toMatch(/INFO: stopped/);
  }, 60_000);

  it('an invalid value is a configuration error: exit 2, nothing started', async () => {
    const proc = spawn(process.execPath, [CLI, 'serve'], {
      cwd: ROOT,
      env: serverEnv({
        LOG_FORMAT: 'yaml',
        DATABASE_URL: db.url,
        DATA_DIR: dataDir,
        PORT: String(await freeTcpPort()),
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    others.push(proc);
    let stderr = '';
    let stdout = '';
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toBe('gatehouse: invalid configuration:\n  - LOG_FORMAT must be one of pretty, json\n');
    expect(stdout).toBe('');
  }, 30_000);

  /** `serve` with stdout and stderr on a pseudo-terminal (script(1)); its output once stopped by the banner's PID. */
  async function onTerminal(extra: Record<string, string>): Promise<string> {
    const port = await freeTcpPort();
    const command = [process.execPath, CLI, 'serve'].map((a) => `'${a}'`).join(' ');
    const env = serverEnv({
      JWT_SECRET: SECRET,
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
    delete env.NO_COLOR;
    const proc = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...env, ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    others.push(proc);
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
    // stdout and stderr share the terminal: the banner comes after the "serving" line.
    const pid = Number(await eventually('the banner', 20_000, async () => /PID (\d+):/.exec(out)?.[1]));
    process.kill(pid, 'SIGTERM');
    await Promise.race([
      exited,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`did not exit:\n${out}`)), 20_000).unref()),
    ]);
    expect(out).toContain(`Gatehouse is serving at http://127.0.0.1:${port}`);
    return out.replace(/\r/g, '');
  }

  it('unset, on a terminal: pretty, coloured unless NO_COLOR is set', async () => {
    const coloured = await onTerminal({});
    expect(coloured).toMatch(/\x1b\[32mINFO\x1b\[39m/);
    const plain = coloured.replace(/\x1b\[[0-9;]*m/g, '');
    expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gatehouse is serving \{/m);
    expect(plain).not.toMatch(/^\{"level"/m);

    const uncoloured = await onTerminal({ NO_COLOR: '1' });
    expect(uncoloured).not.toMatch(/\x1b\[/);
    expect(uncoloured).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gatehouse is serving \{/m);
    // LOG_FORMAT still decides when it is set.
    expect(await onTerminal({ LOG_FORMAT: 'json' })).toMatch(/^\{"level":30,.*"msg":"gatehouse is serving"\}$/m);
  }, 90_000);
});
