// @ts-check
// Small helpers shared by the benchmarks: percentiles, a micro-benchmark loop, table printing, args.

/**
 * Sorted copy, then the value at quantile q (nearest rank).
 * @param {ArrayLike<number> | Iterable<number>} values
 * @param {number} q
 * @returns {number}
 */
export function quantile(values, q) {
  const sorted = Float64Array.from(/** @type {ArrayLike<number>} */ (values)).sort();
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/**
 * The middle value (the mean of the two middle values for an even count).
 * @param {ArrayLike<number> | Iterable<number>} values
 * @returns {number}
 */
export function median(values) {
  const sorted = Float64Array.from(/** @type {ArrayLike<number>} */ (values)).sort();
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** A value that the optimiser cannot prove unused. */
export let sink = 0;
/** @param {unknown} v */
export function consume(v) {
  sink = (sink + (typeof v === 'string' ? v.length : v === null || v === undefined ? 1 : 2)) | 0;
}

const now = () => Number(process.hrtime.bigint()); // ns

/**
 * Time fn(i) per op. Ops run in batches (sized so one batch takes about `batchUs`), each batch is
 * one sample of the per-op time; `runs` runs of `runMs` after a `warmupMs` warm-up.
 * Returns the median and p99 of the per-op samples (µs), ops/s (median over runs) and the spread.
 * @param {(i: number) => unknown} fn
 * @param {{ warmupMs?: number, runs?: number, runMs?: number, batchUs?: number }} [options]
 */
export function measure(fn, { warmupMs = 300, runs = 5, runMs = 400, batchUs = 20 } = {}) {
  let i = 0;
  // Warm-up (also lets the JIT settle before the batch size is chosen).
  const warmEnd = now() + warmupMs * 1e6;
  while (now() < warmEnd) for (let k = 0; k < 64; k++) consume(fn(i++));
  // Batch size from a quick calibration.
  let batch = 1;
  for (;;) {
    const t0 = now();
    for (let k = 0; k < batch; k++) consume(fn(i++));
    const dt = now() - t0;
    if (dt >= batchUs * 1000 || batch >= 1 << 20) break;
    batch *= 2;
  }
  /** @type {number[]} */
  const samples = [];
  /** @type {number[]} */
  const runRates = [];
  /** @type {number[]} */
  const runMedians = [];
  for (let r = 0; r < runs; r++) {
    /** @type {number[]} */
    const runSamples = [];
    let ops = 0;
    const start = now();
    const end = start + runMs * 1e6;
    let t = start;
    while (t < end) {
      const t0 = t;
      for (let k = 0; k < batch; k++) consume(fn(i++));
      t = now();
      runSamples.push((t - t0) / batch / 1000); // µs per op
      ops += batch;
    }
    runRates.push(ops / ((t - start) / 1e9));
    runMedians.push(median(runSamples));
    for (const s of runSamples) samples.push(s);
  }
  return {
    medianUs: median(samples),
    p99Us: quantile(samples, 0.99),
    opsPerSec: median(runRates),
    runMedianMinUs: Math.min(...runMedians),
    runMedianMaxUs: Math.max(...runMedians),
    batch,
    samples: samples.length,
  };
}

/** @typedef {string | number | boolean | null | undefined} Cell */

/**
 * Print rows (arrays of cells) as an aligned text table with a header.
 * @param {readonly string[]} header
 * @param {readonly (readonly Cell[])[]} rows
 */
export function table(header, rows) {
  const cells = [header, ...rows].map((r) => r.map((c) => (c === undefined || c === null ? '' : String(c))));
  const widths = header.map((_, k) => Math.max(...cells.map((r) => r[k].length)));
  const numeric = header.map((_, k) =>
    rows.every((r) => typeof r[k] === 'number' || /^[-+]?[\d.,]+\s*(µs|ms|MB|x|%|\/s)?$/.test(String(r[k] ?? ''))),
  );
  const line = (/** @type {string[]} */ r) =>
    r.map((c, k) => (numeric[k] ? c.padStart(widths[k]) : c.padEnd(widths[k]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/**
 * The same rows as a Markdown table.
 * @param {readonly string[]} header
 * @param {readonly (readonly Cell[])[]} rows
 */
export function markdown(header, rows) {
  const esc = (/** @type {Cell} */ c) => String(c ?? '').replace(/\|/g, '\\|');
  return [
    `| ${header.map(esc).join(' | ')} |`,
    `|${header.map((_, k) => (rows.every((r) => typeof r[k] === 'number') ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}

/**
 * @param {number | null | undefined} n
 * @param {number} [digits]
 */
export function fmt(n, digits = 2) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return String(n);
  return n.toFixed(digits);
}

/** @param {number} n */
export function fmtInt(n) {
  return Math.round(n).toLocaleString('en-US');
}

/** --quick, --json <file>, --markdown <file>, and `--name value` pairs. */
export function parseArgs(argv = process.argv.slice(2)) {
  /** @type {{ quick: boolean, json: string | null, markdown: string | null, extra: Record<string, string | true> }} */
  const out = { quick: false, json: null, markdown: null, extra: {} };
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k];
    if (a === '--quick') out.quick = true;
    else if (a === '--markdown') out.markdown = argv[++k];
    else if (a === '--json') out.json = argv[++k];
    else if (a.startsWith('--')) {
      const [name, value] = a.slice(2).split('=', 2);
      out.extra[name] = value ?? (argv[k + 1] && !argv[k + 1].startsWith('--') ? argv[++k] : true);
    }
  }
  return out;
}

/** @typedef {{ target: string, value: string, met: boolean | null }} Check */

/**
 * A check's verdict: `met` is true, false, or null for a figure shown beside the targets, not one.
 * @param {Check} check
 */
export function metText(check) {
  return check.met === null ? 'info' : check.met ? 'yes' : 'NO';
}

/**
 * The table of a benchmark's target checks, printed last by each benchmark.
 * @param {readonly Check[]} checks
 */
export function targetsTable(checks) {
  return table(
    ['target', 'measured', 'met'],
    checks.map((c) => [c.target, c.value, metText(c)]),
  );
}
