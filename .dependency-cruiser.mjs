/**
 * The import graph's rules, checked by `npm run check:graph` (part of `npm test`).
 *
 * Every package's src/ is one graph of files (type-only imports count: a circle of types is a
 * circle a reader has to climb around all the same). Imports of another @coral package resolve to
 * its build and are outside the graph: the packages' own graph is a DAG by construction (tsc's
 * project references refuse a cycle).
 */
/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No file of a package imports itself back through others (a file circle).',
      from: { pathNot: '^packages/dsht/src/' },
      to: { circular: true },
    },
    // dsht's rewiring by construction (its NodeContext and the façade, merged 2026-12-04) closed
    // 32 circular paths again (context ↔ membership/peers ↔ types ↔ cluster/dsht-binding ↔ dsht,
    // contact ↔ id/id): reported as warnings until they are opened, every other package an error.
    {
      name: 'no-circular-dsht-pending',
      severity: 'warn',
      comment: 'dsht: file circles still to open (see the rule above).',
      from: { path: '^packages/dsht/src/' },
      to: { circular: true },
    },
    // Pending (issue 30 part 1, httpprx in one direction: kit/ ← … ← commit/ ← proxy/): enable once
    // httpprx is layered. On 2026-12-04 it would report 32 imports from 7 folders (audit/ added 2
    // to commit 2, fetch 8, request 4, serve 9, site 3, site-control 3) of proxy/core, headers,
    // respond and types.
    // {
    //   name: 'httpprx-no-arrow-up-to-proxy',
    //   severity: 'error',
    //   comment: 'Only the package entry and bin/ import proxy/: every stage folder sits below it.',
    //   from: { path: '^packages/httpprx/src/[^/]+/', pathNot: '^packages/httpprx/src/(proxy|bin)/' },
    //   to: { path: '^packages/httpprx/src/proxy/' },
    // },
  ],
  options: {
    includeOnly: '^packages/[^/]+/src/',
    exclude: { path: '(^|/)(dist|node_modules)/' },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.js', '.d.ts'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'types', 'default'],
    },
    cache: false,
  },
};
