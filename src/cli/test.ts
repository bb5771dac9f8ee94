// `gatehouse test [DIR] [--env E]`: run the policy test files of DIR against DIR's policies and print one
// table of disagreements. Exit 0 all pass, 1 any disagreement, 2 bad files.
import { runPolicyTests } from '../policy/cases.js';
import { formatProblem } from '../policy/errors.js';
import { defineCommand, parseCommand } from './args.js';
import { envOf } from './caller.js';
import { EXIT, type Io } from './io.js';

export const TEST = defineCommand({
  name: 'test',
  usage: `usage: gatehouse test [DIR] [--env E]

Runs the cases of DIR's *.test.yaml files (default: ./policies) against DIR's policies, as the
service would decide them, and prints one table of the cases whose answer disagrees.

options:
  --env E       the environment of the cases (and case files) that name none (default: POLICY_ENV)
  -h, --help    show this help

exit status: 0 every case passes; 1 a case disagrees; 2 a problem in the policy or test files, or in the arguments
`,
  options: { env: { type: 'string' } },
  positionals: { min: 0, max: 1 },
});

export async function runTest(argv: string[], io: Io): Promise<number> {
  const parsed = parseCommand(argv, TEST, io);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const dir = positionals[0] ?? 'policies';
  // For cases (and case files) that name no `env`.
  const { results, problems } = await runPolicyTests(dir, envOf(values));
  if (problems.length > 0) {
    for (const p of problems) io.err(`${formatProblem(p)}\n`);
    return EXIT.invalid;
  }
  const failed = results.filter((r) => r.failures.length > 0);
  if (failed.length > 0) {
    const rows = failed.map((r) => [`${r.case.file}:${r.case.line}`, r.case.name, r.case.want, r.got.decision, r.got.rule, r.failures.join('; ')]);
    io.out(table(['case', 'name', 'want', 'got', 'rule', 'disagreement'], rows));
  }
  io.out(`${results.length - failed.length} passed, ${failed.length} failed\n`);
  return failed.length > 0 ? EXIT.failed : EXIT.ok;
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    `${cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()}\n`;
  return line(head) + line(widths.map((w) => '-'.repeat(w))) + rows.map(line).join('');
}
