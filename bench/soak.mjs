// @ts-check
// A bounded soak of the real server process: `node dist/main.js serve` with the
// example policies (POLICY_ENV=prod), on the embedded PostgreSQL (or --database-url / DATABASE_URL),
// driven at a steady open-loop rate with a realistic mix of /decide calls (allow, deny, abort,
// require_approval, a schema refusal, a pii finding) plus full approval cycles (create → grant →
// redeem → redeem again). Every answer is checked against what the policy says.
//
// Reports errors, RSS at the end of warm-up and at the end, latency p50/p99 (measured from each
// request's SCHEDULED time, so a stall is not hidden), and exits 1 when a bound is broken:
//   - any unexpected answer or network error (the only statuses are 200, 201 and 403, as expected);
//   - RSS growth after warm-up over --max-rss-growth-mb (default 50);
//   - /decide p99 over --max-p99-ms (default 250);
//   - achieved rate under 90% of --rate;
//   - the server not exiting 0 on SIGTERM.
//
// Usage: npm run soak [-- --seconds 60 --rate 1000 --approvals-per-second 5 --database-url URL]
// Not part of `npm test`.
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist', 'main.js');

// ---- options -------------------------------------------------------------------------------------

const args = process.argv.slice(2);
/**
 * @param {string} name
 * @param {string} fallback
 */
function option(name, fallback) {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = args[i + 1];
  if (v === undefined) throw new Error(`--${name} needs a value`);
  return v;
}
/** @type {(name: string, fallback: number) => number} */
const num = (name, fallback) => {
  const v = Number(option(name, String(fallback)));
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a number ≥ 0`);
  return v;
};
const SECONDS = num('seconds', 60);
const RATE = num('rate', 1000);
const APPROVALS_PER_SECOND = num('approvals-per-second', 5);
const MAX_RSS_GROWTH_MB = num('max-rss-growth-mb', 50);
const MAX_P99_MS = num('max-p99-ms', 250);
const CONCURRENCY = num('concurrency', 64);
const WARMUP_SECONDS = num('warmup', Math.min(10, Math.max(2, Math.round(SECONDS / 4))));
const DATABASE_URL = option('database-url', process.env.DATABASE_URL ?? '');

if (!existsSync(CLI)) {
  console.error('dist/main.js is missing: run `npm run soak` (it builds first)');
  process.exit(2);
}

// ---- tokens (HS256, signed here) -----------------------------------------------------------------

const SECRET = randomBytes(32).toString('base64url');
const b64 = (/** @type {string} */ x) => Buffer.from(x).toString('base64url');
/** @param {Record<string, unknown>} claims */
function sign(claims) {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(JSON.stringify({ iat: now, exp: now + 24 * 3600, ...claims }))}`;
  return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}
const agents = Array.from({ length: 10 }, (_, i) =>
  sign({ sub: `soak-agent-${i}`, team: 'support', agent: 'soak-bot', roles: [] }),
);
const approver = sign({ sub: 'soak-operator', team: 'ops', roles: ['approver'] });

// ---- the mix: what to send, and what the example policies answer (POLICY_ENV=prod) ----------------

/** @typedef {{ weight: number, body: (i: number) => { tool: string, args: Record<string, unknown> }, status: number, decision: string }} Mix */
/** @type {Mix[]} */
const MIX = [
  { weight: 35, body: (i) => ({ tool: 'lookup_order', args: { order: `A${i}` } }), status: 200, decision: 'allow' },
  {
    weight: 15,
    body: (i) => ({ tool: 'refund', args: { order: `R${i}`, amount: 40 } }),
    status: 200,
    decision: 'allow',
  },
  {
    weight: 15,
    body: (i) => ({ tool: 'refund', args: { order: `R${i}`, amount: 120 } }),
    status: 403,
    decision: 'require_approval',
  },
  { weight: 10, body: (i) => ({ tool: 'send_note', args: { text: `note ${i}` } }), status: 200, decision: 'allow' },
  {
    weight: 5,
    body: (i) => ({ tool: 'send_note', args: { text: `mail u${i}@example.com` } }),
    status: 403,
    decision: 'require_approval',
  },
  { weight: 5, body: () => ({ tool: 'wipe_orders', args: {} }), status: 403, decision: 'abort' },
  { weight: 5, body: (i) => ({ tool: 'shell_exec', args: { cmd: `ls ${i}` } }), status: 403, decision: 'deny' },
  {
    weight: 5,
    body: (i) => ({ tool: 'dispatch_vendor', args: { unitId: `U${i}`, estimateUsd: 5000 } }),
    status: 403,
    decision: 'deny',
  },
  {
    weight: 5,
    body: (i) => ({ tool: 'refund', args: { order: `R${i}`, amount: '40' } }),
    status: 403,
    decision: 'deny',
  }, // schema
];
/** @type {Mix[]} */
const WHEEL = MIX.flatMap((m) => Array(m.weight).fill(m));

// ---- HTTP ----------------------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
let port = 0;

/**
 * One request; never rejects: a network error is status 0. `body` is the answer's JSON, null when it is not JSON.
 * @param {string} method
 * @param {string} path
 * @param {string} token
 * @param {unknown} [body]
 * @returns {Promise<{ status: number, body?: any, error?: NodeJS.ErrnoException }>} any: the API's JSON, checked field by field by the callers
 */
function call(method, path, token, body) {
  return new Promise((resolve) => {
    const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        /** @type {Buffer[]} */
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          let json = null;
          try {
            json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            // a truncated or non-JSON body is an error below
          }
          resolve({ status: res.statusCode ?? 0, body: json });
        });
        res.on('error', (error) => resolve({ status: 0, error }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error) => resolve({ status: 0, error }));
    if (payload) req.write(payload);
    req.end();
  });
}

// ---- results -------------------------------------------------------------------------------------

/** @type {number[]} */
const latencies = []; // ms, measured phase only
const errors = new Map(); // description → count
let sent = 0;
let completed = 0;
let measuredFrom = Infinity;
/** @param {string} what */
function error(what) {
  errors.set(what, (errors.get(what) ?? 0) + 1);
}
const cycles = { ok: 0, failed: 0 };

/**
 * @param {number[]} sorted
 * @param {number} p
 */
function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// ---- server --------------------------------------------------------------------------------------

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = /** @type {import('node:net').AddressInfo} */ (s.address()).port;
      s.close(() => resolve(p));
    });
  });
}

/** @param {number | undefined} pid */
function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** @param {string} dataDir */
async function startServer(dataDir) {
  port = await freePort();
  const env = { ...process.env };
  for (const k of Object.keys(env))
    if (/^(JWT_|POLICY_|NODE_ENV$|PORT$|HOST$|LOG_|DATA_DIR$|DATABASE_URL$)/.test(k)) delete env[k];
  Object.assign(env, {
    PORT: String(port),
    HOST: '127.0.0.1',
    JWT_SECRET: SECRET,
    POLICY_DIR: join(ROOT, 'policies'),
    POLICY_ENV: 'prod',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ...(DATABASE_URL ? { DATABASE_URL } : {}),
  });
  const child = spawn(process.execPath, [CLI, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let head = '';
  /** @type {string[]} */
  let tail = [];
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-4000)));
  /** @type {Promise<{ code: number | string | null, signal?: NodeJS.Signals | null }>} */
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  await new Promise((/** @type {(v?: unknown) => void} */ resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the server did not start within 120 s:\n${head}\n${stderr}`)),
      120_000,
    );
    const onData = (/** @type {Buffer} */ c) => {
      if (head.length < 20_000) head += c;
      if (head.includes('gatehouse is serving')) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        // The decision log keeps flowing; only its non-decision lines are kept (the last few).
        child.stdout.on('data', (d) => {
          for (const line of String(d).split('\n'))
            if (line && !line.includes('"msg":"decision"')) tail = [...tail.slice(-20), line];
        });
        resolve();
      }
    };
    child.stdout.on('data', onData);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code ?? signal}) before serving:\n${head}\n${stderr}`));
    });
  });
  return { child, exited, stderr: () => stderr, tail: () => tail.join('\n') };
}

// ---- load ----------------------------------------------------------------------------------------

/** @param {number} endAt */
async function decideLoad(endAt) {
  // Open loop: request k is due at start + k / RATE; each is sent when due (or as soon as a slot of
  // CONCURRENCY frees up) and its latency counts from when it was due.
  const start = performance.now();
  const total = Math.floor(((endAt - start) / 1000) * RATE);
  let next = 0;
  let inFlight = 0;
  /** @type {((v?: unknown) => void) | null} */
  let wake = null;
  /** @type {(k: number, due: number) => Promise<void>} */
  const one = async (k, due) => {
    const m = /** @type {Mix} */ (WHEEL[k % WHEEL.length]);
    const r = await call('POST', '/decide', /** @type {string} */ (agents[k % agents.length]), m.body(k));
    const done = performance.now();
    completed++;
    if (due >= measuredFrom) latencies.push(done - due);
    if (r.status === 0) error(`network: ${r.error?.code ?? r.error?.message}`);
    else if (r.status !== m.status || r.body?.decision !== m.decision)
      error(
        `${m.body(0).tool}: ${r.status} ${r.body?.decision ?? JSON.stringify(r.body)?.slice(0, 80)} (want ${m.status} ${m.decision})`,
      );
  };
  while (next < total) {
    const now = performance.now();
    const due = start + (next * 1000) / RATE;
    if (due > now) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(10, due - now)));
      continue;
    }
    if (inFlight >= CONCURRENCY) {
      await new Promise((resolve) => (wake = resolve));
      continue;
    }
    inFlight++;
    sent++;
    const k = next++;
    one(k, due).finally(() => {
      inFlight--;
      const w = /** @type {((v?: unknown) => void) | null} */ (wake);
      wake = null;
      w?.();
    });
  }
  while (inFlight > 0) await new Promise((resolve) => (wake = resolve));
}

/** @param {number} endAt */
async function approvalCycles(endAt) {
  if (APPROVALS_PER_SECOND === 0) return;
  const period = 1000 / APPROVALS_PER_SECOND;
  for (let i = 0; performance.now() < endAt; i++) {
    const started = performance.now();
    const token = /** @type {string} */ (agents[i % agents.length]);
    const req = { tool: 'refund', args: { order: `C${i}-${randomBytes(3).toString('hex')}`, amount: 150 + (i % 50) } };
    /** @type {(what: string, r: Awaited<ReturnType<typeof call>>) => void} */
    const fail = (what, r) => {
      cycles.failed++;
      error(`approval cycle ${what}: ${r.status} ${JSON.stringify(r.body)?.slice(0, 100) ?? r.error?.message}`);
    };
    const created = await call('POST', '/approvals', token, req);
    if (created.status !== 201 || created.body?.status !== 'pending') fail('create', created);
    else {
      const id = created.body.id;
      const granted = await call('POST', `/approvals/${id}/grant`, approver, { note: 'soak' });
      if (granted.status !== 200 || granted.body?.status !== 'granted') fail('grant', granted);
      else {
        const redeemed = await call('POST', '/decide', token, { ...req, approval_id: id });
        if (
          redeemed.status !== 200 ||
          redeemed.body?.decision !== 'allow' ||
          redeemed.body?.approval?.status !== 'consumed'
        )
          fail('redeem', redeemed);
        else {
          const again = await call('POST', '/decide', token, { ...req, approval_id: id });
          if (again.status !== 403 || again.body?.decision !== 'require_approval') fail('second redeem', again);
          else cycles.ok++;
        }
      }
    }
    const wait = period - (performance.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

// ---- main ----------------------------------------------------------------------------------------

const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-soak-'));
// As root the embedded server runs as user `postgres`: a DATA_DIR it can reach keeps the cluster in it.
chmodSync(dataDir, 0o755);
/** @type {Awaited<ReturnType<typeof startServer>> | null} */
let server = null;
let exitCode = 0;
try {
  console.log(
    `soak: ${SECONDS} s at ${RATE} /decide per second (warm-up ${WARMUP_SECONDS} s), ${APPROVALS_PER_SECOND} approval cycles per second, ` +
      `${DATABASE_URL ? 'the given database' : 'the embedded PostgreSQL'}`,
  );
  server = await startServer(dataDir);
  const pid = server.child.pid;
  const rssStart = rssMb(pid);
  const t0 = performance.now();
  const endAt = t0 + SECONDS * 1000;
  const warmEnd = t0 + WARMUP_SECONDS * 1000;
  measuredFrom = warmEnd;
  /** @type {{ at: number, rss: number }[]} */
  const samples = [];
  let rssWarm = NaN;
  const sampler = setInterval(() => {
    const now = performance.now();
    const rss = rssMb(pid);
    samples.push({ at: Math.round((now - t0) / 1000), rss });
    if (Number.isNaN(rssWarm) && now >= warmEnd) rssWarm = rss;
    const s = Math.round((now - t0) / 1000);
    if (s > 0 && s % 10 === 0) {
      console.log(
        `  ${s} s: ${completed} answered, ${[...errors.values()].reduce((a, b) => a + b, 0)} errors, RSS ${rss.toFixed(1)} MB`,
      );
    }
  }, 1000);
  await Promise.all([decideLoad(endAt), approvalCycles(endAt)]);
  clearInterval(sampler);
  const rssEnd = rssMb(pid);
  const elapsed = (performance.now() - t0) / 1000;

  server.child.kill('SIGTERM');
  /** @type {{ code: number | string | null, signal?: NodeJS.Signals | null }} */
  const exit = await Promise.race([
    server.exited,
    new Promise((resolve) => setTimeout(() => resolve({ code: 'timeout' }), 20_000)),
  ]);
  agent.destroy();

  const sorted = latencies.sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  const achieved = completed / elapsed;
  const growth = rssEnd - (Number.isNaN(rssWarm) ? rssStart : rssWarm);
  const errorCount = [...errors.values()].reduce((a, b) => a + b, 0);
  const report = {
    seconds: Math.round(elapsed * 10) / 10,
    target_rate: RATE,
    achieved_rate: Math.round(achieved),
    decide: {
      sent,
      answered: completed,
      measured: sorted.length,
      p50_ms: Math.round(p50 * 100) / 100,
      p99_ms: Math.round(p99 * 100) / 100,
      max_ms: Math.round((sorted.at(-1) ?? NaN) * 100) / 100,
    },
    approval_cycles: cycles,
    errors: Object.fromEntries(errors),
    rss_mb: {
      start: round1(rssStart),
      after_warmup: round1(rssWarm),
      end: round1(rssEnd),
      growth_after_warmup: round1(growth),
      max: round1(Math.max(...samples.map((x) => x.rss))),
    },
    server_exit: exit,
  };
  console.log(JSON.stringify(report, null, 2));

  /** @type {string[]} */
  const broken = [];
  if (errorCount > 0) broken.push(`${errorCount} unexpected answers or network errors`);
  if (cycles.ok === 0 && APPROVALS_PER_SECOND > 0) broken.push('no approval cycle completed');
  if (!(growth <= MAX_RSS_GROWTH_MB))
    broken.push(`RSS grew ${round1(growth)} MB after warm-up (bound ${MAX_RSS_GROWTH_MB} MB)`);
  if (!(p99 <= MAX_P99_MS)) broken.push(`/decide p99 ${round1(p99)} ms (bound ${MAX_P99_MS} ms)`);
  if (achieved < RATE * 0.9) broken.push(`achieved ${Math.round(achieved)} /s, under 90% of ${RATE} /s`);
  if (exit.code !== 0)
    broken.push(`the server exited ${JSON.stringify(exit)} on SIGTERM (want 0):\n${server.tail()}\n${server.stderr()}`);
  if (broken.length > 0) {
    exitCode = 1;
    console.log(`soak FAILED:\n  - ${broken.join('\n  - ')}`);
  } else {
    console.log(
      `soak passed: 0 errors, p50 ${round1(p50)} ms, p99 ${round1(p99)} ms, RSS +${round1(growth)} MB after warm-up`,
    );
  }
} catch (err) {
  exitCode = 1;
  console.error(`soak error: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  if (server && server.child.exitCode === null && server.child.signalCode === null) {
    // SIGTERM first: the server stops its embedded PostgreSQL on the way out.
    server.child.kill('SIGTERM');
    const gone = await Promise.race([
      server.exited.then(() => true),
      new Promise((resolve) => setTimeout(() => resolve(false), 15_000)),
    ]);
    if (!gone) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(exitCode);

/** @param {number} x */
function round1(x) {
  return Math.round(x * 10) / 10;
}
