// @ts-check
// An open-loop, fixed-rate load generator, run as its own process (autocannon's `overallRate` lets
// each connection send its share of a second back to back and then wait, so its "fixed rate" is a
// burst at the top of every second). Requests are scheduled at exact times (rate per second, checked
// every millisecond) and spread over a pool of keep-alive connections; a request that finds every
// connection busy waits, and its latency is counted from its SCHEDULED time (no coordinated omission).
// Latency is measured in microseconds. Config: one JSON argument
//   {host, port, path, body, headers, connections, rate, duration, warmup, headersPerConnection?}
// With `headersPerConnection` (a list), connection i sends headers + headersPerConnection[i % n]:
// one caller per connection (the budgets benchmark gives each its own counters).
// Result: one JSON line on stdout.
import { connect } from 'node:net';

const cfg = JSON.parse(process.argv[2]);
const body = Buffer.from(cfg.body);
/** @param {Record<string, string>} headers */
const requestWith = (headers) => {
  const head = [
    `POST ${cfg.path} HTTP/1.1`,
    `host: ${cfg.host}:${cfg.port}`,
    'connection: keep-alive',
    `content-length: ${body.length}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ].join('\r\n');
  return Buffer.concat([Buffer.from(head), body]);
};
const perConnection = cfg.headersPerConnection ?? [{}];
const requests = perConnection.map((/** @type {Record<string, string>} */ extra) =>
  requestWith({ ...cfg.headers, ...extra }),
);
let made = 0;

const now = () => Number(process.hrtime.bigint()) / 1000; // µs
/** @type {number[]} */
const latencies = [];
const statuses = new Map();
let errors = 0;
let measuring = false;
let lastDone = 0;
let measureFrom = Infinity; // only requests scheduled from here on are counted

/** @type {number[]} */
const queue = []; // scheduled times (µs) not yet sent
/** @typedef {ReturnType<typeof makeConnection>} Connection */
/** @type {Connection[]} */
const idle = [];

function makeConnection() {
  const socket = connect({ host: cfg.host, port: cfg.port, noDelay: true });
  const conn = {
    socket,
    scheduled: 0,
    buf: Buffer.alloc(0),
    expect: -1,
    status: 0,
    request: requests[made++ % requests.length],
  };
  socket.on('connect', () => dispatch(conn));
  socket.on('data', (chunk) => {
    conn.buf = conn.buf.length === 0 ? chunk : Buffer.concat([conn.buf, chunk]);
    for (;;) {
      if (conn.expect < 0) {
        const end = conn.buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const headerText = conn.buf.subarray(0, end).toString('latin1');
        conn.status = Number(headerText.slice(9, 12));
        const m = /\r\ncontent-length: *(\d+)/i.exec(headerText);
        if (!m) throw new Error('response without content-length');
        conn.expect = end + 4 + Number(m[1]);
      }
      if (conn.buf.length < conn.expect) return;
      conn.buf = conn.buf.subarray(conn.expect);
      conn.expect = -1;
      if (measuring && conn.scheduled >= measureFrom) {
        lastDone = now();
        latencies.push(lastDone - conn.scheduled);
        statuses.set(conn.status, (statuses.get(conn.status) ?? 0) + 1);
      }
      dispatch(conn);
    }
  });
  socket.on('error', () => {
    errors++;
  });
  return conn;
}

/** @param {Connection} conn */
function dispatch(conn) {
  const next = queue.shift();
  if (next === undefined) {
    idle.push(conn);
    return;
  }
  conn.scheduled = next;
  conn.socket.write(conn.request);
}

const conns = Array.from({ length: cfg.connections }, makeConnection);
await new Promise((resolve) => setTimeout(resolve, 200));

const intervalUs = 1e6 / cfg.rate;
/** @param {number} seconds */
async function phase(seconds) {
  const start = now();
  const end = start + seconds * 1e6;
  let k = 0;
  let maxQueue = 0;
  await new Promise((/** @type {(v?: unknown) => void} */ resolve) => {
    const tick = () => {
      const t = now();
      while (start + k * intervalUs <= Math.min(t, end)) {
        queue.push(start + k * intervalUs);
        k++;
      }
      while (queue.length > 0 && idle.length > 0) dispatch(/** @type {Connection} */ (idle.pop()));
      if (queue.length > maxQueue) maxQueue = queue.length;
      if (t >= end) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  return { sent: k, maxQueue };
}

await phase(cfg.warmup ?? 1);
measuring = true;
const t0 = now();
measureFrom = t0;
const { sent, maxQueue } = await phase(cfg.duration);
// Let the last requests finish (bounded).
const drainUntil = now() + 2e6;
while ((queue.length > 0 || idle.length < conns.length) && now() < drainUntil)
  await new Promise((r) => setTimeout(r, 5));
measuring = false;
const elapsed = (Math.max(lastDone, t0 + cfg.duration * 1e6) - t0) / 1e6;
for (const c of conns) c.socket.destroy();

latencies.sort((a, b) => a - b);
const q = (/** @type {number} */ p) =>
  latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)] / 1000 : NaN;
process.stdout.write(
  JSON.stringify({
    tool: 'open-loop',
    offered: cfg.rate,
    sent,
    completed: latencies.length,
    // Requests still unanswered when the 2 s drain ended count as lost (not in the latencies).
    lost: sent - latencies.length,
    achievedPerSec: latencies.length / elapsed,
    elapsed,
    latencyMs: { p50: q(0.5), p90: q(0.9), p99: q(0.99), p999: q(0.999), max: q(1) },
    statuses: Object.fromEntries(statuses),
    errors,
    maxQueue,
  }) + '\n',
);
