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
    // httpprx in one direction (issue 30 part 1; docs/architecture.md, "httpprx" folder map):
    //   components (cache/ store/ hot/ origin/ peer/ fairness/ site-control/ audit/'s quarantine
    //   and verdict, the root files) ← kit/ (ProxyCore, RequestCtx, header and response helpers)
    //   ← mapping/ transfer/ ← request/ serve/ ← commit/ ← fetch/ (audit/auditor.ts, site/)
    //   ← proxy/ (CoralProxy, the lookup, the public option types) ← index.ts, bin/.
    // Each rule below forbids one kind of arrow back up; together they keep the order.
    {
      name: 'httpprx-no-arrow-up-to-proxy',
      severity: 'error',
      comment: 'Only the package entry and bin/ import proxy/: every stage folder sits below it.',
      from: { path: '^packages/httpprx/src/[^/]+/', pathNot: '^packages/httpprx/src/(proxy|bin)/' },
      to: { path: '^packages/httpprx/src/proxy/' },
    },
    {
      name: 'httpprx-kit-below-stages',
      severity: 'error',
      comment: 'kit/ imports no stage: only the components it describes and the root files.',
      from: { path: '^packages/httpprx/src/kit/' },
      to: {
        path: '^packages/httpprx/src/((request|serve|fetch|commit|site|transfer|mapping|bin)/|audit/auditor)',
      },
    },
    {
      name: 'httpprx-stages-below-fetch',
      severity: 'error',
      comment:
        'mapping/, transfer/, request/, serve/ and commit/ never import fetch/ or what is above it.',
      from: { path: '^packages/httpprx/src/(mapping|transfer|request|serve|commit)/' },
      to: { path: '^packages/httpprx/src/((fetch|site)/|audit/auditor)' },
    },
    {
      name: 'httpprx-answers-below-commit',
      severity: 'error',
      comment: 'mapping/, transfer/, request/ and serve/ never import commit/.',
      from: { path: '^packages/httpprx/src/(mapping|transfer|request|serve)/' },
      to: { path: '^packages/httpprx/src/commit/' },
    },
    {
      name: 'httpprx-parsing-below-answers',
      severity: 'error',
      comment: 'mapping/ and transfer/ never import request/ or serve/.',
      from: { path: '^packages/httpprx/src/(mapping|transfer)/' },
      to: { path: '^packages/httpprx/src/(request|serve)/' },
    },
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
