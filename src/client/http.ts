// One HTTP exchange with Gatehouse: the bearer token, a timeout, JSON both ways, and every answer that
// is not what the route promises turned into a GatehouseError carrying the problem's `code` (spec section 5.1)
// and its Retry-After. Nothing here retries: what may be retried, and how long, is the caller's call.
import type { RequestOptions } from './types.js';

export interface Transport {
  request(method: 'GET' | 'POST', path: string, options?: Exchange): Promise<Answer>;
}

/** One request as a route sends it (./api.ts): the wire body and headers, and the caller's options. */
export interface Exchange extends RequestOptions {
  body?: unknown;
  /** An exact body, sent as given (a retry that must repeat its first attempt byte for byte). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Statuses besides 2xx whose JSON body is an answer, not an error (403 and 409 decisions). */
  accept?: readonly number[];
  /** Added to the timeout: a long-poll holds the request this long by design. */
  holdMs?: number;
}

export interface Answer {
  status: number;
  body: unknown;
  headers: FetchResponse['headers'];
}

/** What the transport asks of `fetch`: Node's global fetch is one, ./node-http.ts another. */
export type Fetch = (
  url: string,
  init: {
    method: 'GET' | 'POST';
    headers: Record<string, string>;
    body: string | null;
    signal: AbortSignal;
    redirect: 'error';
  },
) => Promise<FetchResponse>;

export interface FetchResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

export interface TransportOptions {
  url: string;
  token?: string;
  getToken?: () => string | Promise<string>;
  /** Per request, default 10,000; a call's own `timeoutMs` replaces it. */
  timeoutMs?: number;
  fetch?: Fetch;
}

/** Why a call to Gatehouse did not give an answer: `status` 0 when none arrived (network, timeout). */
export class GatehouseError extends Error {
  override readonly name = 'GatehouseError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    /** The problem document as the server sent it (RFC 9457 members, wire names), or the body that was not an answer. */
    readonly problem?: unknown,
    /** From Retry-After, when the server sent one. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export function createTransport(options: TransportOptions): Transport {
  if (typeof options.url !== 'string' || !/^https?:\/\//.test(options.url))
    throw new TypeError('createClient: `url` must be an http(s) URL');
  if (options.token === undefined && options.getToken === undefined)
    throw new TypeError('createClient: give `token` or `getToken`');
  const base = options.url.replace(/\/+$/, '');
  const timeoutMs = wholeMs(options.timeoutMs ?? 10_000, 'createClient');
  const fetchImpl: Fetch = options.fetch ?? globalThis.fetch;
  const tokenOf = async (): Promise<string> => options.token ?? (await options.getToken!());

  return {
    async request(method, path, o = {}) {
      const limitMs =
        (o.timeoutMs === undefined ? timeoutMs : wholeMs(o.timeoutMs, `${method} ${path}`)) + (o.holdMs ?? 0);
      const timeout = AbortSignal.timeout(limitMs);
      const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
      const headers: Record<string, string> = {
        accept: 'application/json',
        authorization: `Bearer ${await tokenOf()}`,
        ...o.headers,
      };
      const payload = o.rawBody ?? (o.body === undefined ? null : JSON.stringify(o.body));
      if (payload !== null) headers['content-type'] = 'application/json';
      let res: FetchResponse;
      let text: string;
      try {
        res = await fetchImpl(`${base}${path}`, { method, headers, body: payload, signal, redirect: 'error' });
        text = await res.text();
      } catch (err) {
        if (o.signal?.aborted) throw o.signal.reason ?? err;
        const why = timeout.aborted ? `no answer within ${limitMs} ms` : String((err as Error)?.cause ?? err);
        throw new GatehouseError(`Gatehouse could not be reached (${method} ${path}): ${why}`, 0, 'unreachable');
      }
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        throw new GatehouseError(
          `Gatehouse answered ${res.status} with a body that is not JSON (${method} ${path})`,
          res.status,
          'bad_answer',
        );
      }
      const ok = (res.status >= 200 && res.status < 300) || (o.accept?.includes(res.status) ?? false);
      const isProblem = res.headers.get('content-type')?.startsWith('application/problem+json') ?? false;
      if (ok && !isProblem) return { status: res.status, body, headers: res.headers };
      const problem = body as { code?: unknown; detail?: unknown; title?: unknown } | undefined;
      const code = typeof problem?.code === 'string' ? problem.code : `http_${res.status}`;
      const detail =
        typeof problem?.detail === 'string' ? problem.detail : typeof problem?.title === 'string' ? problem.title : '';
      throw new GatehouseError(
        `Gatehouse answered ${res.status} ${code} (${method} ${path})${detail ? `: ${detail}` : ''}`,
        res.status,
        code,
        body,
        retryAfterMs(res.headers.get('retry-after')),
      );
    },
  };
}

/** A timeout as AbortSignal.timeout() takes it: whole milliseconds, 0 or more. */
function wholeMs(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new TypeError(`${where}: \`timeoutMs\` must be whole milliseconds, 0 or more`);
  return value;
}

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 section 10.2.3). */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Sends again what the server asked to be sent again (503, `too_many_waits`), after its
 * `Retry-After` or a doubling delay, while `deadline` allows; a `keyed` request (an Idempotency-Key
 * makes it safe to repeat) also after an answer lost on the way, three times at most.
 */
export async function retrying<T>(
  send: () => Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  keyed = false,
): Promise<T> {
  for (let n = 0, lost = 0; ; n++) {
    try {
      return await send();
    } catch (err) {
      if (!(err instanceof GatehouseError)) throw err;
      const retryable =
        err.status === 503 || err.code === 'too_many_waits' || (keyed && err.status === 0 && lost++ < 3);
      const delay = err.retryAfterMs ?? 250 * 2 ** n;
      if (!retryable || Date.now() + delay > deadline) throw err;
      await sleep(delay, signal);
    }
  }
}
