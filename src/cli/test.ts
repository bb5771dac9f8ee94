// `gatehouse test [DIR] [--env E]`: run the policy test files of DIR against DIR's policies and print one
// table of disagreements. Exit 0 all pass, 1 any disagreement, 2 bad files.
import { parseArgs } from 'node:util';
import { runPolicyTests } from '../policy/cases.js';
import { formatProblem } from '../policy/errors.js';
import { envOf } from './caller.js';
import { EXIT, type Io } from './io.js';

export async function runTest(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { env: { type: 'string' } } });
  const dir = positionals[0] ?? 'policies';
  // For cases (and case files) that name no `env`.
  const { results, problems } = await runPolicyTests(dir, envOf(values));
  if (problems.length > 0) {
    for (const p of problems) io.err(`${formatProblem(p)}\n`);
    return EXIT.invalid;
  }
  const failed = results.filter((r) => r.failures.length > 0);
  if (failed.length > 0) {
    const rows = failed.map((r) => [
      `${r.case.file}:${r.case.line}`,
      r.case.name,
      r.case.want,
      r.got.decision,
      r.got.rule,
      r.failures.join('; '),
    ]);
    io.out(table(['case', 'name', 'want', 'got', 'rule', 'disagreement'], rows));
  }
  io.out(`${results.length - failed.length} passed, ${failed.length} failed\n`);
  return failed.length > 0 ? EXIT.failed : EXIT.ok;
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd()}\n`;
  return line(head) + line(widths.map((w) => '-'.repeat(w))) + rows.map(line).join('');
}
