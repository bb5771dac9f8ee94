// Real server processes (`node dist/main.js serve`) and policy directories for them, and the
// processes a test started, found through /proc to kill them outright.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist', 'main.js');

/** A copy of the example policies (policies/ belongs to users: tests never read it). */
export const EXAMPLE_POLICIES = 'test/cases/payments';

async function newestMtimeUnder(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? await newestMtimeUnder(path) : (await stat(path)).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is older than src/ (as test/http/e2e.test.ts does). */
export async function ensureBuilt(): Promise<void> {
  const built = await stat(CLI).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  if (built > (await newestMtimeUnder(join(ROOT, 'src')))) return;
  const output = await new Promise<string>((resolve) => {
    execFile('npm', ['run', 'build'], { cwd: ROOT, env: serverEnv({}), timeout: 120_000 }, (_err, stdout, stderr) =>
      resolve(`${stdout}${stderr}`),
    );
  });
  // tsc emits even with type errors in files others are editing; what matters is a fresh dist.
  const after = await stat(CLI).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  if (after <= built) throw new Error(`npm run build did not produce dist/main.js:\n${output}`);
}

/** A TCP port nothing listens on right now (127.0.0.1). */
export function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** A temporary directory holding these files (name → text); removed by the caller. */
export async function policyDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-rel-policies-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

export interface ServerProcess {
  proc: ChildProcess;
  pid: number;
  port: number;
  base: string;
  stdout(): string;
  stderr(): string;
  /** Exit code (null when killed by a signal) once the process has exited; rejects after ms. */
  exited(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL if still running, and wait for it. */
  kill(): Promise<void>;
}

/**
 * The parent's environment without anything Gatehouse reads, plus `env`. POLICY_DIR is always set:
 * the caller's, or the example policies' copy (an absolute path), never the default ./policies, which
 * is the users' to change (test/service/policies-dir.test.ts).
 */
export function serverEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v !== undefined &&
      !/^(JWT_|DATABASE_URL$|POLICY_|NODE_ENV$|PORT$|HOST$|LOG_|DATA_DIR$|BODY_LIMIT$|DB_|SHUTDOWN_|APPROVAL_TTL$|GRANT_TTL$|HEADERS_TIMEOUT$|REQUEST_TIMEOUT$|KEEP_ALIVE_TIMEOUT$|MAX_CONNECTIONS$|WEBHOOK|PUBLIC_URL$|OIDC_|SESSION_|ROLES_CLAIM$|TEAM_CLAIM$|AGENT_CLAIM$)/.test(
        k,
      )
    )
      out[k] = v;
  }
  return { ...out, POLICY_DIR: join(ROOT, EXAMPLE_POLICIES), ...env };
}

/**
 * `node dist/main.js serve` with this environment (PORT is picked when absent); resolves once it logs
 * "gatehouse is serving", rejects if it exits first or takes longer than startMs. `at` runs another
 * copy (an installed package's bin) from another directory.
 */
export async function startServer(
  env: Record<string, string>,
  startMs = 30_000,
  at: { cli?: string; cwd?: string } = {},
): Promise<ServerProcess> {
  const port = env.PORT !== undefined ? Number(env.PORT) : await freeTcpPort();
  const proc = spawn(process.execPath, [at.cli ?? CLI, 'serve'], {
    cwd: at.cwd ?? ROOT,
    env: serverEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env, PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (c: string) => (out += c));
  proc.stderr.on('data', (c: string) => (err += c));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const server: ServerProcess = {
    proc,
    pid: proc.pid!,
    port,
    base: `http://127.0.0.1:${port}`,
    stdout: () => out,
    stderr: () => err,
    exited: (ms) =>
      Promise.race([
        exit,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`the server did not exit within ${ms} ms:\n${out}\n${err}`)), ms).unref(),
        ),
      ]),
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exit;
    },
  };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the server did not start within ${startMs} ms:\n${out}\n${err}`)),
      startMs,
    );
    const check = (): void => {
      if (out.includes('gatehouse is serving')) {
        clearTimeout(timer);
        proc.stdout.off('data', check);
        resolve();
      }
    };
    proc.stdout.on('data', check);
    void exit.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code ?? signal}) before serving:\n${out}\n${err}`));
    });
    check();
  });
  return server;
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON (the whole body must parse: a truncated body throws). */
  body: Record<string, unknown>;
  ms: number;
}

/** One HTTP call with a JSON body and a bearer token; throws on a network error or a non-JSON body. */
export async function callJson(
  base: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  timeoutMs = 15_000,
): Promise<JsonResponse> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: JSON.parse(text) as Record<string, unknown>,
    ms: performance.now() - started,
  };
}

/** Polls `fn` until it returns a value other than undefined; rejects after ms. */
export async function eventually<T>(
  what: string,
  ms: number,
  fn: () => Promise<T | undefined>,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The direct children of pid; [] when there are none, the process is gone, or this is not Linux. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** SIGKILL a process, ignoring one that is already gone. */
/** Whether a process of that id exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function kill9(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
