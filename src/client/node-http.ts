// A `fetch` for one short-lived process, over node:http(s): what `gatehouse hook claude-code` sends
// its few requests with. Node 20's global fetch loads undici on its first call, which costs more CPU
// than the rest of a hook process together (docs/performance.md, "The Claude Code hook"), and node:http
// a fraction of that. It does what the
// transport (./http.ts) asks of a fetch and no more: the whole answer is read before it resolves,
// redirects are never followed (a 3xx is answered as it is, which the transport refuses), and the
// signal aborts the exchange at any point.
import type * as Http from 'node:http';
import type { IncomingMessage, RequestOptions } from 'node:http';
import { createRequire } from 'node:module';
import type { Fetch, FetchResponse } from './http.js';

// Required, not imported: on Node 24 the ES module namespace of node:http reads every export, and
// one of them loads undici, the cost this module exists to avoid (`node --input-type=module -e
// "import 'node:http'"` then lists internal/deps/undici in process.moduleLoadList).
const require = createRequire(import.meta.url);

export const nodeHttpFetch: Fetch = async (url, init) => {
  const target = new URL(url);
  // node:https loads TLS: only for an https:// service.
  const request: typeof Http.request | undefined =
    target.protocol === 'https:'
      ? (require('node:https') as typeof import('node:https')).request
      : target.protocol === 'http:'
        ? (require('node:http') as typeof Http).request
        : undefined;
  if (request === undefined) throw new TypeError(`not an http(s) URL: ${target.protocol}`);
  init.signal.throwIfAborted();
  const headers =
    init.body === null ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
  const options: RequestOptions = { method: init.method, headers, signal: init.signal };
  return new Promise<FetchResponse>((resolve, reject) => {
    const req = request(target, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      // An answer cut short (the connection closed mid-body) is no answer; after 'end' this is a no-op.
      res.on('close', () => {
        if (!res.complete) reject(new Error('the answer was cut short'));
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: { get: (name) => headerOf(res, name) },
          text: async () => text,
        });
      });
    });
    req.on('error', reject);
    req.end(init.body ?? undefined);
  });
};

/** A header as fetch's Headers.get() gives it: repeated values joined with ", ", null when absent. */
function headerOf(res: IncomingMessage, name: string): string | null {
  const value = res.headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
