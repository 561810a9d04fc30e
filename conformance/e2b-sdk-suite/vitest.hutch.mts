// vitest for E2B's SDK tests against hutch (run.sh): the unit project of
// the SDK's own vitest.config.mts, limited to tests/api and tests/sandbox,
// two files at a time on a shared machine.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['tests/sandbox/**/*.test.ts', 'tests/api/**/*.test.ts'],
    isolate: true,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    environment: 'node',
    setupFiles: ['tests/globalFetchFallback.setup.ts'],
    maxWorkers: 2,
  },
})
