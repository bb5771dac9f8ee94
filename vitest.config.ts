import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/postgres.ts'],
    // The default output, plus a watchdog that fails a hung run promptly (see the file).
    reporters: ['default', './test/setup/watchdog.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
