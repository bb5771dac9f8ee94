import { defineConfig } from 'vitest/config';

// Two projects: `core`, the pure parts (strict JSON, the policy language and decide(), the
// configuration, the log, the layering), which never start PostgreSQL (`npx vitest run --project
// core`); and `service`, everything around them, against one real PostgreSQL started once per run.
const CORE = ['test/json/**/*.test.ts', 'test/policy/**/*.test.ts', 'test/config.test.ts', 'test/log.test.ts', 'test/house.test.ts'];

export default defineConfig({
  test: {
    // The default output, plus a watchdog that fails a hung run promptly (see the file).
    reporters: ['default', './test/setup/watchdog.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      // The core files share one module graph per worker (isolate: false): they hold no state between
      // files, and loading the policy modules once instead of forty times saves a third of their time.
      { extends: true, test: { name: 'core', include: CORE, isolate: false } },
      { extends: true, test: { name: 'service', include: ['test/**/*.test.ts'], exclude: CORE, globalSetup: ['test/setup/postgres.ts'] } },
    ],
  },
});
