import { defineConfig } from 'vitest/config';

// Two projects: `core`, the pure parts (strict JSON, the policy language and decide(), the
// configuration, the log, the layering, the documents' citations), which never start PostgreSQL (`npx vitest run --project
// core`); and `service`, everything around them, against one real PostgreSQL started once per run.
const CORE = ['test/json/**/*.test.ts', 'test/policy/**/*.test.ts', 'test/config.test.ts', 'test/log.test.ts', 'test/house.test.ts', 'test/docs/**/*.test.ts'];

export default defineConfig({
  test: {
    // The default output, plus a watchdog that fails a hung run promptly (see the file).
    reporters: ['default', './test/setup/watchdog.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'core', include: CORE } },
      { extends: true, test: { name: 'service', include: ['test/**/*.test.ts'], exclude: CORE, globalSetup: ['test/setup/postgres.ts'] } },
    ],
  },
});
