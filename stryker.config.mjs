// Mutation testing of the security-critical core (docs/testing.md, Mutation testing): `npm run
// mutation`, never part of `npm test`. StrykerJS 9.5 is the line that runs on Node 20; 10 needs 22.
// @ts-check
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  mutate: [
    'src/policy/condition/shell.ts',
    'src/policy/path.ts',
    'src/policy/condition/compare.ts',
    'src/policy/decide.ts',
    'src/policy/glob.ts',
    'src/json/canonical.ts',
  ],
  coverageAnalysis: 'perTest',
  // The machine is shared; two test runners at a time.
  concurrency: 2,
  // Stryker rewrites the named tsconfig in its sandbox with the `typescript` package's JavaScript
  // API, which TypeScript 7 (the native compiler) no longer has. Ours needs no rewriting (no
  // `extends`, no project references), so name a file that does not exist and the step is skipped.
  tsconfigFile: 'tsconfig.stryker-none.json',
  // Reruns test only the mutants whose code or covering tests changed.
  incremental: true,
  incrementalFile: 'reports/mutation/incremental.json',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
