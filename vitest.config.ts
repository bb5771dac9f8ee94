import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Two projects: `core`, the pure parts (strict JSON, the policy language and decide(), the
// configuration, the log, the layering, the documents' citations), which never start PostgreSQL (`npx vitest run --project
// core`); and `service`, everything around them, against one real PostgreSQL started once per run.
const CORE = [
  'test/json/**/*.test.ts',
  'test/policy/**/*.test.ts',
  'test/config.test.ts',
  'test/log.test.ts',
  'test/house.test.ts',
  'test/docs/**/*.test.ts',
];

// `npm run test:deep` (vitest --mode deep) runs every generated test at its deep count
// (test/helpers/runs.ts); a GATEHOUSE_PROPERTY_RUNS already set wins.
export default defineConfig(({ mode }) => ({
  test: {
    // The default output, plus a watchdog that fails a hung run promptly (see the file).
    reporters: ['default', './test/setup/watchdog.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: mode === 'deep' ? { GATEHOUSE_PROPERTY_RUNS: process.env['GATEHOUSE_PROPERTY_RUNS'] ?? '1' } : {},
    // vitest's default is one worker fewer than the cores: one on a two-core machine, where the
    // service files, which mostly wait on PostgreSQL and the processes they start, would then run one
    // at a time. At least four (docs/operations.md "How long the suite takes" has the timings).
    maxWorkers: Math.max(4, availableParallelism() - 1),
    // Files share one module graph per worker (isolate: false) instead of loading fastify, ajv and
    // the policy modules afresh for each of a hundred files: a third less CPU. Every file makes its
    // own apps, databases and processes, and restores what it stubs or spies on; the one module mock
    // (test/json/sha256-fallback.test.ts) reloads what it mocks and puts it back.
    isolate: false,
    projects: [
      { extends: true, test: { name: 'core', include: CORE } },
      {
        extends: true,
        test: {
          name: 'service',
          include: ['test/**/*.test.ts'],
          exclude: CORE,
          globalSetup: ['test/setup/postgres.ts'],
        },
      },
    ],
  },
}));
