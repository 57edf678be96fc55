import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const pkg = (name: string, entry = 'index') =>
  fileURLToPath(new URL(`./packages/${name}/src/${entry}.ts`, import.meta.url));

// One vitest run covers every package. Workspace imports resolve to TypeScript sources, so tests
// never run against a stale build; spawned processes (multi-process tests) use the `tsc -b` output.
// The JSON report is what .ci/run reads to print "N passed, N failed".
export default defineConfig({
  resolve: {
    alias: {
      '@coral/runtime': pkg('runtime'),
      '@coral/testkit': pkg('testkit'),
      '@coral/keyring': pkg('keyring'),
      '@coral/names': pkg('names'),
      '@coral/connguard': pkg('connguard'),
      '@coral/accesslog': pkg('accesslog'),
      // Before '@coral/dsht': an alias matches a prefix, the first that matches wins.
      '@coral/dsht/internal': pkg('dsht', 'internal'),
      '@coral/dsht': pkg('dsht'),
      '@coral/sim': pkg('sim'),
      '@coral/dnssrv': pkg('dnssrv'),
      '@coral/httpprx': pkg('httpprx'),
      '@coral/node': pkg('node'),
    },
  },
  test: {
    include: ['packages/*/test/**/*.spec.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: [
      'default',
      ['json', { outputFile: process.env.CORAL_VITEST_JSON ?? 'reports/vitest.json' }],
    ],
  },
});
