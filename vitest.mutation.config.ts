import { defineConfig } from 'vitest/config';
import { CORE } from './vitest.config.js';

// The core project, for mutation testing (stryker.config.mjs): the pure modules under test need no
// PostgreSQL. Left out: test/house.test.ts, which reads the source text (Stryker's instrumented copy
// fails its checks, and no mutant changes them), and the three suites that generate whole policy
// sets at random, which take minutes per mutant they cover. A mutant the rest kills is killed by the
// whole suite too, so the scores are lower bounds.
export const LEFT_OUT = ['test/house.test.ts', 'test/policy/properties.test.ts', 'test/policy/differential.test.ts', 'test/policy/inventory.agreement.test.ts'];

export default defineConfig({
  test: { include: CORE, exclude: LEFT_OUT, testTimeout: 30_000, hookTimeout: 60_000 },
});
