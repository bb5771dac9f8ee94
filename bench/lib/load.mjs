// @ts-check
// The closed-loop load generator, run as its own process: autocannon against one URL, the result
// printed as one JSON line on stdout. Config: one JSON argument
//   {url, body, headers, connections, duration, overallRate?, expectStatus?, headersList?}
// With `headersList`, each connection sends the requests headers + headersList[0], [1], … in turn
// (autocannon's `requests`): the calls of several callers.
import autocannon from 'autocannon';

const cfg = JSON.parse(process.argv[2]);
const result = await autocannon({
  url: cfg.url,
  method: 'POST',
  body: cfg.body,
  headers: cfg.headers,
  ...(cfg.headersList
    ? {
        requests: cfg.headersList.map((/** @type {Record<string, string>} */ h) => ({
          method: 'POST',
          body: cfg.body,
          headers: { ...cfg.headers, ...h },
        })),
      }
    : {}),
  connections: cfg.connections,
  duration: cfg.duration,
  ...(cfg.overallRate ? { overallRate: cfg.overallRate } : {}),
  pipelining: 1,
  timeout: 10,
});
const l = result.latency;
process.stdout.write(
  JSON.stringify({
    tool: 'autocannon',
    reqPerSec: result.requests.average,
    total: result.requests.total,
    duration: result.duration,
    // autocannon keeps latency in whole milliseconds (hdr histogram, 1 ms lowest value).
    latencyMs: { p50: l.p50, p90: l.p90, p99: l.p99, max: l.max, mean: l.average },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
  }) + '\n',
);
