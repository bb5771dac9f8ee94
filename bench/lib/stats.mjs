// Small helpers shared by the benchmarks: percentiles, a micro-benchmark loop, table printing, args.

/** Sorted copy, then the value at quantile q (nearest rank). */
export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** The middle value (the mean of the two middle values for an even count). */
export function median(values) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** A value that the optimiser cannot prove unused. */
export let sink = 0;
export function consume(v) {
  sink = (sink + (typeof v === 'string' ? v.length : v === null || v === undefined ? 1 : 2)) | 0;
}

const now = () => Number(process.hrtime.bigint()); // ns

/**
 * Time fn(i) per op. Ops run in batches (sized so one batch takes about `batchUs`), each batch is
 * one sample of the per-op time; `runs` runs of `runMs` after a `warmupMs` warm-up.
 * Returns the median and p99 of the per-op samples (µs), ops/s (median over runs) and the spread.
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
  const samples = [];
  const runRates = [];
  const runMedians = [];
  for (let r = 0; r < runs; r++) {
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

/** Print rows (arrays of cells) as an aligned text table with a header. */
export function table(header, rows) {
  const cells = [header, ...rows].map((r) => r.map((c) => (c === undefined || c === null ? '' : String(c))));
  const widths = header.map((_, k) => Math.max(...cells.map((r) => r[k].length)));
  const numeric = header.map((_, k) => rows.every((r) => typeof r[k] === 'number' || /^[-+]?[\d.,]+\s*(µs|ms|MB|x|%|\/s)?$/.test(String(r[k] ?? ''))));
  const line = (r) => r.map((c, k) => (numeric[k] ? c.padStart(widths[k]) : c.padEnd(widths[k]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** The same rows as a Markdown table. */
export function markdown(header, rows) {
  const esc = (c) => String(c ?? '').replace(/\|/g, '\\|');
  return [
    `| ${header.map(esc).join(' | ')} |`,
    `|${header.map((_, k) => (rows.every((r) => typeof r[k] === 'number') ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}

export function fmt(n, digits = 2) {
  if (!Number.isFinite(n)) return String(n);
  return n.toFixed(digits);
}

export function fmtInt(n) {
  return Math.round(n).toLocaleString('en-US');
}

/** --quick, --json <file>, --markdown <file>, and `--name value` pairs. */
export function parseArgs(argv = process.argv.slice(2)) {
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

/** A check's verdict: `met` is true, false, or null for a figure shown beside the targets, not one. */
export function metText(check) {
  return check.met === null ? 'info' : check.met ? 'yes' : 'NO';
}

/** The table of a benchmark's target checks ({target, value, met}), printed last by each benchmark. */
export function targetsTable(checks) {
  return table(
    ['target', 'measured', 'met'],
    checks.map((c) => [c.target, c.value, metText(c)]),
  );
}
