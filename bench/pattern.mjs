// @ts-check
// The pattern guard's linear time (docs/spec.md section 2.5): inspect() of a 1 MiB result against
// the pathological-looking pattern `(a+)+$`, which a backtracking engine takes exponential time on.
// Three inputs: 1 MiB of `a` then `!` (no match: the classic attack), 1 MiB of `a` (a match: the
// guard denies), and the redaction of that match (positions, not only a yes or no). Median of a
// few runs after a warm-up, of the built code (dist/; `npm run build` first).
//
//   node bench/pattern.mjs
import { performance } from 'node:perf_hooks';
import { inspect } from '../dist/policy/inspect.js';
import { buildPolicySet } from '../dist/policy/load.js';

const MiB = 1 << 20;
const RUNS = 7;
const identity = { user: 'bench', team: null, agent: null, roles: [] };
const enc = (/** @type {string} */ s) => new TextEncoder().encode(s);

/** @param {'deny' | 'redact'} action */
function setWith(action) {
  const text = `policy: bench\nguards:\n  - {id: evil, guard: pattern, on: [result], action: ${action}, patterns: [{name: evil, regex: "(a+)+$"}]}\n`;
  return buildPolicySet([{ path: 'bench.yaml', bytes: enc(text) }], { env: null });
}

/** @param {import('../dist/policy/model.js').PolicySet} set @param {string} result */
function median(set, result) {
  const request = /** @type {const} */ ({ stage: 'result', tool: 'read_file', args: {}, result });
  let decision = '';
  inspect(set, request, identity); // warm-up
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    decision = inspect(set, request, identity).decision;
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(RUNS / 2)] ?? Number.NaN, decision };
}

const noMatch = `${'a'.repeat(MiB)}!`;
const match = 'a'.repeat(MiB);
/** @type {{ input: string, action: string, ms: number, decision: string }[]} */
const rows = [
  { input: '1 MiB of a, then !', action: 'deny', ...median(setWith('deny'), noMatch) },
  { input: '1 MiB of a', action: 'deny', ...median(setWith('deny'), match) },
  { input: '1 MiB of a', action: 'redact', ...median(setWith('redact'), match) },
];
console.log('pattern (a+)+$ on a 1 MiB result (inspect(), median of 7)');
for (const { input, action, ms, decision } of rows) {
  console.log(`  ${input.padEnd(20)} action ${action.padEnd(7)} → ${decision.padEnd(6)} ${ms.toFixed(1)} ms`);
}
