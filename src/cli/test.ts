// `gatehouse test [DIR] [--env E] [--seed N]`: run the policy test files of DIR against DIR's policies
// (cases and `never:` properties) and print one table of disagreements, each property's shrunk
// counterexample below it. Exit 0 all pass, 1 any disagreement, 2 bad files.
import { canonicalize } from '../json/canonical.js';
import type { JsonValue } from '../json/value.js';
import { type PropertyResult, runPolicyTests } from '../policy/cases.js';
import { formatProblem } from '../policy/errors.js';
import type { Identity, RunView } from '../policy/model.js';
import type { Counterexample } from '../policy/never.js';
import { defineCommand, parseCommand, usageError } from './args.js';
import { envOf } from './caller.js';
import { EXIT, type Io } from './io.js';
import { table } from './table.js';

export const TEST = defineCommand({
  name: 'test',
  usage: `usage: gatehouse test [DIR] [--env E] [--seed N]

Runs the cases and properties of DIR's *.test.yaml files (default: ./policies) against DIR's
policies, as the service would decide them, and prints one table of the cases whose answer
disagrees and the properties that broke, each with its shrunk counterexample. On stderr, a warning
for each property that held without being tried: its \`when\` held for no generated request, or no
generated request reached a rule that could give an answer it forbids.

options:
  --env E       the environment of the cases (and case files) that name none (default: POLICY_ENV)
  --seed N      the seed of every property (0 to 2147483647), to replay a counterexample printed
  -h, --help    show this help

exit status: 0 every case passes and every property holds; 1 a case disagrees or a property broke;
2 a problem in the policy or test files, or in the arguments
`,
  options: { env: { type: 'string' }, seed: { type: 'string' } },
  positionals: { min: 0, max: 1 },
});

export async function runTest(argv: string[], io: Io): Promise<number> {
  const parsed = parseCommand(argv, TEST, io);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const dir = positionals[0] ?? 'policies';
  let seed: number | undefined;
  if (values.seed !== undefined) {
    if (!/^\d{1,10}$/.test(values.seed) || Number(values.seed) > 0x7fffffff) {
      return usageError(io, 'test', '--seed must be an integer from 0 to 2147483647', TEST.usage);
    }
    seed = Number(values.seed);
  }
  // For cases (and case files) that name no `env`.
  const { results, properties, problems } = await runPolicyTests(dir, {
    env: envOf(values),
    ...(seed !== undefined ? { seed } : {}),
  });
  if (problems.length > 0) {
    for (const p of problems) io.err(`${formatProblem(p)}\n`);
    return EXIT.invalid;
  }
  // Warnings, not failures: the property held, but on inputs that could not have broken it there.
  for (const p of properties)
    for (const w of p.warnings) io.err(`warning: ${p.property.file}:${p.property.line}: ${p.property.name}: ${w}\n`);
  const failedCases = results.filter((r) => r.failures.length > 0);
  const broken = properties.filter((p) => p.failures.length > 0);
  const rows = failedCases.map((r) => [
    `${r.case.file}:${r.case.line}`,
    r.case.name,
    r.case.want,
    r.got.decision,
    r.got.rule,
    r.failures.join('; '),
  ]);
  for (const p of broken) rows.push(...propertyRows(p));
  if (rows.length > 0) io.out(table(['case', 'name', 'want', 'got', 'rule', 'disagreement'], rows));
  for (const p of broken)
    for (const f of p.failures) if (f.counterexample) io.out(`\n${counterexampleBlock(p, f.counterexample, f)}`);
  if (broken.length > 0) io.out('\n');
  const passed = results.length - failedCases.length + properties.length - broken.length;
  const failed = failedCases.length + broken.length;
  const runs = properties.reduce((n, p) => n + p.runs, 0);
  const counts =
    properties.length === 0
      ? ''
      : `${plural(results.length, 'case')}, ${plural(properties.length, 'property', 'properties')} (${plural(runs, 'run')}): `;
  io.out(`${counts}${passed} passed, ${failed} failed\n`);
  return failed > 0 ? EXIT.failed : EXIT.ok;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** One row per failed check of a broken property: want is what it must never be. */
function propertyRows(p: PropertyResult): string[][] {
  const where = `${p.property.file}:${p.property.line}`;
  const want = `not ${[...p.property.decisions].join('|')}`;
  return p.failures.map((f) => {
    const env = f.env === null ? '' : ` in ${f.env}`;
    if (f.counterexample) {
      const c = f.counterexample;
      return [
        where,
        p.property.name,
        want,
        c.got.decision,
        c.got.rule,
        `counterexample below: ${f.target}${env}, seed ${p.property.seed}`,
      ];
    }
    return [where, p.property.name, want, '-', '-', `${f.target}${env}: ${f.problem ?? 'failed'}`];
  });
}

/** The shrunk request that broke a property, as a case would write it, and how to replay it. */
function counterexampleBlock(
  p: PropertyResult,
  c: Counterexample,
  f: { env: string | null; runs: number; shrinks: number },
): string {
  const lines: [string, string][] = [
    ['tool', c.tool],
    ['args', json(c.args)],
    ['claims', json(claimsOf(c.identity))],
    ['env', f.env ?? '(none)'],
    ['run', c.run ? runText(c.run) : '(none)'],
    ['got', `${c.got.decision} by ${c.got.rule}: ${c.got.reason}`],
    [
      'found',
      `after ${plural(f.runs, 'run')}, shrunk ${plural(f.shrinks, 'time')}; --seed ${p.property.seed} replays it`,
    ],
  ];
  const width = Math.max(...lines.map(([k]) => k.length));
  return `${p.property.file}:${p.property.line}: ${p.property.name}\n${lines.map(([k, v]) => `  ${k.padEnd(width)}  ${v}\n`).join('')}`;
}

/** A caller as a case's `claims` writes it (absent team and agent, no roles: left out). */
function claimsOf(id: Identity): JsonValue {
  return {
    sub: id.user,
    ...(id.team !== null ? { team: id.team } : {}),
    ...(id.agent !== null ? { agent: id.agent } : {}),
    ...(id.roles.length > 0 ? { roles: [...id.roles] } : {}),
  };
}

const MAX_STEPS_SHOWN = 5;

/** The run view; a long one (a run at its call budget) with its steps counted, not listed. */
function runText(run: RunView): string {
  const steps = (run.steps ?? []).map((s) => json(s as unknown as JsonValue));
  if (steps.length <= MAX_STEPS_SHOWN) return json(run as unknown as JsonValue);
  const same = steps.every((t) => t === steps[0]);
  const listed = same
    ? `${steps[0]} × ${steps.length}`
    : `${steps.slice(0, MAX_STEPS_SHOWN).join(',')}, … ${steps.length} steps in all`;
  const { steps: _, ...rest } = run;
  const others = json(rest as unknown as JsonValue).slice(1, -1); // canonical order: approvals, id, then steps
  return `{${others === '' ? '' : `${others},`}"steps":[${listed}]}`;
}

function json(value: JsonValue): string {
  try {
    return canonicalize(value);
  } catch {
    return JSON.stringify(value); // not I-JSON (never generated): shown anyway
  }
}
