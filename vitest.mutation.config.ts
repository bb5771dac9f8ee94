import { defineConfig } from 'vitest/config';

// The tests a mutation run (stryker.config.mjs) gives each mutant: the core tests of the six mutated
// modules and of the condition language and decision cases over them. Left out of the core project:
// the suites that generate whole policy sets at random or sweep the language (properties,
// differential, inventory.agreement, condition.attacks, load), which take minutes per
// mutant on a shared machine, and house.test.ts, which reads the source text (the instrumented copy
// fails it, and no mutant changes it). A mutant these kill the whole suite kills too: the scores are
// lower bounds.
export const MUTATION_TESTS = [
  'test/policy/shell.test.ts',
  'test/policy/path.test.ts',
  'test/policy/compare.test.ts',
  'test/policy/condition.test.ts',
  'test/policy/condition.precision.test.ts',
  'test/policy/condition.security.test.ts',
  'test/policy/decide.test.ts',
  'test/policy/decide.edges.test.ts',
  'test/policy/explain.test.ts',
  'test/policy/cases.test.ts',
  'test/policy/limits.test.ts',
  'test/policy/glob.test.ts',
  'test/policy/glob-names.test.ts',
  'test/json/canonical.test.ts',
  'test/json/sha256-fallback.test.ts',
];

export default defineConfig({
  // Generated tests at their deep counts (test/helpers/runs.ts), as the recorded scores were.
  test: {
    include: MUTATION_TESTS,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { GATEHOUSE_PROPERTY_RUNS: process.env['GATEHOUSE_PROPERTY_RUNS'] ?? '1' },
  },
});
