// HTTP as an attacker sees it: problem+json assertions, a raw HTTP/1.1 client over node:net (so a
// test controls every byte on the wire), a listener that counts connections, the Object.prototype probe.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

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
    const framed = options.chunks.map((c) =>
      Buffer.concat([Buffer.from(`${c.length.toString(16)}\r\n`, 'latin1'), c, Buffer.from('\r\n', 'latin1')]),
    );
    return [head, ...framed, Buffer.from('0\r\n\r\n', 'latin1')];
  }
  if (options.contentLength !== 'none') lines.push(`Content-Length: ${options.contentLength ?? bytes.length}`);
  return [Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), bytes])];
}

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
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

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
