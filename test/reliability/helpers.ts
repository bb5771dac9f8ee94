// Shared helpers for the reliability suites (test/reliability/*.test.ts): forged tokens built from
// raw JSON text, problem+json assertions, a raw HTTP/1.1 client over node:net (so a test controls
// every byte on the wire), a listener that counts connections, and the Object.prototype probe.
import { constants as cryptoConstants, createHmac, createSign, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

// ---- tokens -------------------------------------------------------------------------------------

export const b64url = (data: string | Buffer): string => Buffer.from(data).toString('base64url');
export const nowSec = (): number => Math.floor(Date.now() / 1000);

/** A full claim set for the test helpers' defaults (sub agent-1, team support), valid for an hour. */
export function claimSet(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const now = nowSec();
  return { sub: 'agent-1', team: 'support', agent: 'bot', roles: [], iat: now, exp: now + 3600, ...extra };
}

/** The signature of `input` for `alg` with `key` (HMAC secret as string/Buffer, or a private key). */
export function jwsSignature(alg: string, input: string, key: string | Buffer | KeyObject): Buffer {
  if (alg.toLowerCase() === 'none') return Buffer.alloc(0);
  const bits = alg.slice(2);
  if (alg.startsWith('HS')) return createHmac(`sha${bits}`, key as string | Buffer).update(input).digest();
  if (alg.startsWith('RS')) return createSign(`sha${bits}`).update(input).sign(key as KeyObject);
  if (alg.startsWith('PS')) {
    return createSign(`sha${bits}`).update(input).sign({ key: key as KeyObject, padding: cryptoConstants.RSA_PKCS1_PSS_PADDING, saltLength: Number(bits) / 8 });
  }
  if (alg.startsWith('ES')) return createSign(`sha${bits}`).update(input).sign({ key: key as KeyObject, dsaEncoding: 'ieee-p1363' });
  if (alg === 'EdDSA') return cryptoSign(null, Buffer.from(input), key as KeyObject);
  throw new Error(`unsupported alg ${alg}`);
}

/**
 * A compact JWS from raw header and payload TEXT (so a test can write duplicate names, BOMs, odd
 * numbers), signed for `alg` with `key`. `signature` overrides the computed one.
 */
export function signRawJwt(headerText: string | Buffer, payloadText: string | Buffer, alg: string, key: string | Buffer | KeyObject, signature?: Buffer): string {
  const input = `${b64url(headerText)}.${b64url(payloadText)}`;
  return `${input}.${b64url(signature ?? jwsSignature(alg, input, key))}`;
}

/** A compact JWS of these objects: header is `{alg, typ: 'JWT', ...header}`. */
export function forgeJwt(payload: Record<string, unknown>, alg: string, key: string | Buffer | KeyObject, header: Record<string, unknown> = {}): string {
  return signRawJwt(JSON.stringify({ alg, typ: 'JWT', ...header }), JSON.stringify(payload), alg, key);
}

// ---- responses ----------------------------------------------------------------------------------

/** What both inject() responses and rawHttp() responses have. */
export interface AnyResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

export interface ProblemJson {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: { pointer: string; message: string }[];
  [k: string]: unknown;
}

/** A problem+json (RFC 9457) of this status (and code), never carrying a decision. */
export function expectProblemJson(res: AnyResponse, status: number, code?: string): ProblemJson {
  expect(res.statusCode, res.body.slice(0, 500)).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(res.body) as ProblemJson;
  expect(body.status).toBe(status);
  expect(typeof body.type).toBe('string');
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  if (code !== undefined) expect(body.code).toBe(code);
  expect(body).not.toHaveProperty('decision');
  return body;
}

/** 401 problem+json with the unauthorized code. */
export function expectUnauthorized(res: AnyResponse): ProblemJson {
  return expectProblemJson(res, 401, 'unauthorized');
}

// ---- raw HTTP over node:net -------------------------------------------------------------------

/** Start `app` on an ephemeral loopback port; returns the port. The caller closes the app. */
export async function listenLoopback(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

export interface RawResponse extends AnyResponse {
  headers: Record<string, string>;
}

export interface RawResult {
  /** Every complete response read from the connection, in order. */
  responses: RawResponse[];
  /** The server closed the connection (or reset it) before the timeout. */
  closed: boolean;
  /** Nothing ended the exchange within timeoutMs: the socket was destroyed by the client. */
  timedOut: boolean;
  raw: Buffer;
}

export interface RawOptions {
  /** Half-close the client side after the last part (the client "goes away" mid-body). */
  endAfterWrite?: boolean;
  /** Give up after this long (default 5 s). A bound on a hang, not a timing measurement. */
  timeoutMs?: number;
  /** Pause between parts so they arrive as separate TCP segments / reads (default 5 ms). */
  gapMs?: number;
}

/**
 * Send the parts over one fresh TCP connection exactly as given and read until the server closes it
 * (send `Connection: close`), then parse every HTTP/1.1 response in the stream.
 */
export function rawHttp(port: number, parts: (Buffer | string)[], options: RawOptions = {}): Promise<RawResult> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const gapMs = options.gapMs ?? 5;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    let timedOut = false;
    const socket = connect({ port, host: '127.0.0.1' });
    const finish = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      resolve({ responses: parseResponses(raw), closed, timedOut, raw });
    };
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy();
      finish(false);
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => finish(true)); // ECONNRESET counts as the server closing
    socket.on('close', () => finish(!timedOut));
    socket.on('connect', () => {
      void (async () => {
        for (const [i, part] of parts.entries()) {
          if (socket.destroyed) return;
          if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
          socket.write(typeof part === 'string' ? Buffer.from(part, 'latin1') : part);
        }
        if (options.endAfterWrite) socket.end();
      })();
    });
  });
}

/** Parse consecutive HTTP/1.1 responses (Content-Length or chunked bodies). Stops at the first incomplete one. */
export function parseResponses(raw: Buffer): RawResponse[] {
  const out: RawResponse[] = [];
  let pos = 0;
  while (pos < raw.length) {
    const headEnd = raw.indexOf('\r\n\r\n', pos, 'latin1');
    if (headEnd === -1) break;
    const lines = raw.subarray(pos, headEnd).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    let bodyStart = headEnd + 4;
    let body: Buffer;
    if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = raw.indexOf('\r\n', bodyStart, 'latin1');
        if (lineEnd === -1) return out;
        const size = parseInt(raw.subarray(bodyStart, lineEnd).toString('latin1'), 16);
        bodyStart = lineEnd + 2;
        if (size === 0) {
          const trailerEnd = raw.indexOf('\r\n', bodyStart, 'latin1');
          bodyStart = trailerEnd === -1 ? raw.length : trailerEnd + 2;
          break;
        }
        parts.push(raw.subarray(bodyStart, bodyStart + size));
        bodyStart += size + 2;
      }
      body = Buffer.concat(parts);
      pos = bodyStart;
    } else {
      const length = Number(headers['content-length'] ?? '0');
      if (bodyStart + length > raw.length) break;
      body = raw.subarray(bodyStart, bodyStart + length);
      pos = bodyStart + length;
    }
    out.push({ statusCode: Number(m[1]), headers, body: body.toString('utf8') });
  }
  return out;
}

export interface RawPostOptions {
  path?: string;
  /** Extra header lines, written verbatim as `name: value` (repeat a name to send it twice). */
  headers?: [string, string][];
  /** Content-Length to declare (default: the body's length); 'none' sends no Content-Length. */
  contentLength?: number | 'none';
  /** Send the body with Transfer-Encoding: chunked, one chunk per element. */
  chunks?: Buffer[];
  /** Omit the Content-Type header (default: application/json). */
  contentType?: string | null;
}

/** The bytes of a POST request; `body` is ignored when `chunks` is given. Always `Connection: close`. */
export function rawPost(token: string | null, body: Buffer | string, options: RawPostOptions = {}): Buffer[] {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const lines = [`POST ${options.path ?? '/decide'} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (token !== null) lines.push(`Authorization: Bearer ${token}`);
  const contentType = options.contentType === undefined ? 'application/json' : options.contentType;
  if (contentType !== null) lines.push(`Content-Type: ${contentType}`);
  for (const [name, value] of options.headers ?? []) lines.push(`${name}: ${value}`);
  if (options.chunks) {
    lines.push('Transfer-Encoding: chunked');
    const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    const framed = options.chunks.map((c) => Buffer.concat([Buffer.from(`${c.length.toString(16)}\r\n`, 'latin1'), c, Buffer.from('\r\n', 'latin1')]));
    return [head, ...framed, Buffer.from('0\r\n\r\n', 'latin1')];
  }
  if (options.contentLength !== 'none') lines.push(`Content-Length: ${options.contentLength ?? bytes.length}`);
  return [Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), bytes])];
}

// ---- an attacker's listener that counts connections -------------------------------------------

export interface CountingServer {
  url: string;
  connections(): number;
  close(): Promise<void>;
}

/** An HTTP server on loopback that counts every TCP connection made to it (and answers a JWKS). */
export async function startCountingServer(body = '{"keys":[]}'): Promise<CountingServer> {
  let count = 0;
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  server.on('connection', () => count++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => count,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

// ---- Object.prototype ---------------------------------------------------------------------------

/** Names a hostile body would try to plant on Object.prototype. */
export const POLLUTION_PROBES = ['polluted', 'isAdmin', 'x', 'status', 'decided_by', 'roles', 'team', 'tool'] as const;

/** Own property names of Object.prototype, captured when this module loads (before any test). */
export const PROTOTYPE_NAMES_AT_LOAD: readonly string[] = Object.getOwnPropertyNames(Object.prototype).sort();

/** Object.prototype (and Array.prototype) carry nothing a request planted. */
export function expectPrototypeClean(): void {
  const probe = {} as Record<string, unknown>;
  for (const name of POLLUTION_PROBES) {
    expect(probe[name], `Object.prototype.${name}`).toBeUndefined();
    expect(([] as unknown as Record<string, unknown>)[name], `Array.prototype.${name}`).toBeUndefined();
  }
  expect(Object.keys(Object.prototype)).toEqual([]);
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTOTYPE_NAMES_AT_LOAD);
}

// ---- real server processes and policy directories (process, db-faults, policy-load suites) ------

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist', 'main.js');

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
  const built = await stat(CLI).then((s) => s.mtimeMs, () => 0);
  if (built > (await newestMtimeUnder(join(ROOT, 'src')))) return;
  const output = await new Promise<string>((resolve) => {
    execFile('npm', ['run', 'build'], { cwd: ROOT, timeout: 120_000 }, (_err, stdout, stderr) => resolve(`${stdout}${stderr}`));
  });
  // tsc emits even with type errors in files others are editing; what matters is a fresh dist.
  const after = await stat(CLI).then((s) => s.mtimeMs, () => 0);
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

/** The parent's environment without anything Gatehouse reads, plus `env`. */
export function serverEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(JWT_|DATABASE_URL$|POLICY_|NODE_ENV$|PORT$|HOST$|LOG_|DATA_DIR$|BODY_LIMIT$|DB_|SHUTDOWN_|APPROVAL_TTL$|GRANT_TTL$|HEADERS_TIMEOUT$|REQUEST_TIMEOUT$|KEEP_ALIVE_TIMEOUT$|MAX_CONNECTIONS$)/.test(k)) out[k] = v;
  }
  return { ...out, ...env };
}

/**
 * `node dist/main.js serve` with this environment (PORT is picked when absent); resolves once it logs
 * "gatehouse is serving", rejects if it exits first or takes longer than startMs.
 */
export async function startServer(env: Record<string, string>, startMs = 30_000): Promise<ServerProcess> {
  const port = env.PORT !== undefined ? Number(env.PORT) : await freeTcpPort();
  const proc = spawn(process.execPath, [CLI, 'serve'], {
    cwd: ROOT,
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
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the server did not exit within ${ms} ms:\n${out}\n${err}`)), ms).unref()),
      ]),
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exit;
    },
  };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within ${startMs} ms:\n${out}\n${err}`)), startMs);
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
export async function callJson(base: string, method: string, path: string, token: string | null, body?: unknown, timeoutMs = 15_000): Promise<JsonResponse> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, unknown>, ms: performance.now() - started };
}

/** Polls `fn` until it returns a value other than undefined; rejects after ms. */
export async function eventually<T>(what: string, ms: number, fn: () => Promise<T | undefined>, everyMs = 50): Promise<T> {
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
