// The table-driven decision cases: every directory under test/cases holds policy files plus
// *.test.yaml cases and properties (`never:`), run through the same code path as the CLI.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPolicyTests } from '../../src/policy/cases.js';
import { formatProblem } from '../../src/policy/errors.js';

const dirs = readdirSync('test/cases').map((d) => join('test/cases', d));

describe.each(dirs)('%s', (dir) => {
  it('every case gets the decision it wants, and every property holds', async () => {
    const { results, properties, problems } = await runPolicyTests(dir);
    expect(problems.map(formatProblem)).toEqual([]);
    expect(results.length + properties.length).toBeGreaterThan(0);
    const failures = results
      .filter((r) => r.failures.length > 0)
      .map((r) => `${r.case.name}: ${r.failures.join('; ')}`);
    expect(failures).toEqual([]);
    const broken = properties.flatMap((p) =>
      p.failures.map((f) => `${p.property.name} (${f.target}): ${f.problem ?? JSON.stringify(f.counterexample)}`),
    );
    expect(broken).toEqual([]);
  });
});
