/**
 * deploy/monitoring/, checked against a running node:
 * - every metric named by the Prometheus rules (coral.rules.yml) and by the Grafana dashboard's
 *   queries (coral-dashboard.json: its panels' expressions and its variables' queries) is exported
 *   by a real node's /metrics, scraped over HTTP from its admin port, or is a recording rule's
 *   output, or is one Prometheus makes itself (`up`). The expressions are parsed with the PromQL
 *   grammar the Prometheus UI uses (@prometheus-io/lezer-promql), and a label a selector matches
 *   on must be one the node puts on that metric;
 * - the alerts carry a severity and a summary and description, and every rule name is unique;
 * - the dashboard is well-formed for import: unique panel ids, every query on the `datasource`
 *   variable (fed by the `DS_PROMETHEUS` input), an `instance` variable.
 * (`promtool check rules` and `promtool test rules` run in .ci/run.)
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { SampleOrigin, fetchVia } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const dir = join(root, 'deploy/monitoring');

/* eslint-disable @typescript-eslint/no-explicit-any */
type Obj = Record<string, any>;

const rules = parse(readFileSync(join(dir, 'coral.rules.yml'), 'utf8')) as {
  groups: Array<{ name: string; rules: Obj[] }>;
};
const dashboard = JSON.parse(readFileSync(join(dir, 'coral-dashboard.json'), 'utf8')) as Obj;

/** Series Prometheus makes itself for every target. */
const PROMETHEUS_SERIES = new Set(['up']);

/** Labels Prometheus adds to every scraped series (target labels). */
const TARGET_LABELS = new Set(['job', 'instance', '__name__']);

/** Where each PromQL expression comes from, for the failure messages. */
interface Query {
  where: string;
  expr: string;
}

function ruleQueries(): Query[] {
  return rules.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `${g.name}/${r.record ?? r.alert}`, expr: String(r.expr) })),
  );
}

/** Every panel, rows' nested panels included. */
function allPanels(panels: Obj[] = dashboard.panels): Obj[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

function dashboardQueries(): Query[] {
  const out: Query[] = [];
  for (const p of allPanels()) {
    for (const t of p.targets ?? [])
      out.push({ where: `panel ${p.id} "${p.title}"`, expr: t.expr });
  }
  for (const v of dashboard.templating.list as Obj[]) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : v.query.query;
    // Grafana's label_values(selector, label) and query_result(expr) wrap PromQL.
    const inner = /^\s*(?:label_values|query_result)\((.*?)(?:,\s*\w+)?\)\s*$/.exec(q);
    out.push({ where: `variable ${v.name}`, expr: inner ? inner[1]! : q });
  }
  return out;
}

/** Grafana's variables replaced by values PromQL accepts. */
function substitute(expr: string): string {
  return expr
    .replace(/\$__(rate_interval|interval|range)\b/g, '5m')
    .replace(/\$\{[^}]+\}|\$\w+/g, 'x');
}

interface Selector {
  metric: string;
  labels: string[];
}

/** The metric selectors of a PromQL expression; throws on a syntax error. */
function selectors(expr: string): Selector[] {
  const src = substitute(expr);
  const tree = parser.parse(src);
  const out: Selector[] = [];
  const errors: string[] = [];
  tree.iterate({
    enter(n) {
      if (n.type.isError)
        errors.push(`at ${n.from}: ${JSON.stringify(src.slice(n.from, n.from + 20))}`);
      if (n.name !== 'VectorSelector') return;
      const node = n.node;
      let metric = '';
      const id = node.getChild('Identifier');
      if (id) metric = src.slice(id.from, id.to);
      const labels: string[] = [];
      const matchers = node.getChild('LabelMatchers');
      for (const m of matchers ? [...matchers.getChildren('UnquotedLabelMatcher')] : []) {
        const name = m.getChild('LabelName');
        const value = m.getChild('StringLiteral');
        const label = name ? src.slice(name.from, name.to) : '';
        if (label === '__name__' && value) metric = JSON.parse(src.slice(value.from, value.to));
        else labels.push(label);
      }
      out.push({ metric, labels });
    },
  });
  if (errors.length > 0)
    throw new Error(`cannot parse ${JSON.stringify(expr)}: ${errors.join('; ')}`);
  return out;
}

/** Sample names of a scrape (from its TYPE lines and samples) with the labels seen on each. */
function exported(text: string): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>();
  const add = (n: string) => names.get(n) ?? names.set(n, new Set()).get(n)!;
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      const [, name, kind] = type;
      const suffixes =
        kind === 'histogram'
          ? ['_bucket', '_sum', '_count']
          : kind === 'summary'
            ? ['', '_sum', '_count']
            : [''];
      for (const s of suffixes) add(name! + s);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample) continue;
    const labels = add(sample[1]!);
    for (const [, k] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(k!);
  }
  return names;
}

/** What in `queries` names a metric the scrape lacks, or a label its samples never carry. */
function problems(
  queries: Query[],
  scrape: Map<string, Set<string>>,
  recorded: Set<string>,
): string[] {
  const out: string[] = [];
  for (const q of queries) {
    for (const s of selectors(q.expr)) {
      if (recorded.has(s.metric) || PROMETHEUS_SERIES.has(s.metric)) continue;
      const labels = scrape.get(s.metric);
      if (!labels) {
        out.push(`${q.where}: ${s.metric} is not exported by the node`);
        continue;
      }
      // A family with samples: every label matched on is one the node sets.
      if (labels.size === 0) continue;
      for (const l of s.labels) {
        if (!TARGET_LABELS.has(l) && !labels.has(l))
          out.push(`${q.where}: ${s.metric} has no label ${l}`);
      }
    }
  }
  return out;
}

const recorded = new Set(
  rules.groups.flatMap((g) => g.rules.filter((r) => r.record).map((r) => String(r.record))),
);

// --- a running node, with some traffic so that the labelled series exist ---
const FLEET_KEY = '6d0417'.repeat(10) + '6d04';
const token = 'monitoring-admin-token-0123456789';
const ip = `127.0.${randomSubnet()}.61`;
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 2 });
let node: CoralNode;
let scrape = new Map<string, Set<string>>();
let text = '';

function scrapeMetrics(): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: ip, port: 8092, path: '/metrics', headers: { authorization: `Bearer ${token}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(body) : reject(new Error(`/metrics: ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  const { port } = await origin.listen();
  node = await CoralNode.start(
    loadConfig({
      env: {
        CORAL_HOST: ip,
        CORAL_DNS_HOST: ip,
        CORAL_ADMIN_HOST: ip,
        CORAL_DATA_DIR: tmpDir('monitoring'),
        CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
        CORAL_HOSTS: 'www.origin.test=127.0.0.1',
        CORAL_ADMIN_TOKEN: token,
        CORAL_LOG_LEVEL: 'silent',
        CORAL_FLEET_KEYS: FLEET_KEY,
      },
    }),
    { services: realServices, logger: createLogger({ level: 'silent' }) },
  );
  const name = `www.origin.test.${port}.nyud.net`;
  expect((await fetchVia({ ip, port: 8090 }, name, '/obj/1')).status).toBe(200);
  await waitFor(async () => (await node.proxy.cacheList()).length === 1, 10_000, 'stored');
  expect((await fetchVia({ ip, port: 8090 }, name, '/obj/1')).cacheStatus).toMatch(/hit/);
  // Both responses observed (after their last byte), as Prometheus would scrape them.
  await waitFor(
    async () =>
      /coral_http_request_duration_seconds_count\{cache_result="hit",protocol="http"\} 1/.test(
        await scrapeMetrics(),
      ),
    10_000,
    'the hit timed',
  );
  text = await scrapeMetrics();
  scrape = exported(text);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  await origin.close();
});

describe('deploy/monitoring against a running node', () => {
  it('every metric the rules name is exported by the node (or recorded by a rule)', () => {
    expect(problems(ruleQueries(), scrape, recorded)).toEqual([]);
  });

  it('every metric the dashboard queries is exported by the node', () => {
    expect(problems(dashboardQueries(), scrape, recorded)).toEqual([]);
  });

  it('the check catches a metric the node does not export, and a label it does not set', () => {
    const bad = [
      { where: 'test', expr: 'rate(coral_http_requests_totl[5m]) > 0' },
      { where: 'test', expr: 'sum by (x) (coral_cache_bytes{tire="disk"})' },
    ];
    expect(problems(bad, scrape, recorded)).toEqual([
      'test: coral_http_requests_totl is not exported by the node',
      'test: coral_cache_bytes has no label tire',
    ]);
    expect(() => selectors('sum(rate(coral_http_requests_total[5m])')).toThrow(/cannot parse/);
  });

  it('the node exports the new series with the traffic it served', () => {
    const has = (re: RegExp) => expect(text).toMatch(re);
    has(/^coral_http_request_duration_seconds_count\{cache_result="miss",protocol="http"\} 1$/m);
    has(/^coral_http_time_to_first_byte_seconds_count\{cache_result="hit",protocol="http"\} 1$/m);
    has(/^coral_cache_objects\{tier="disk"\} 1$/m);
    has(/^coral_cache_objects\{tier="memory"\} 1$/m);
    has(/^coral_cache_budget_bytes\{tier="disk"\} [1-9]/m);
    has(/^coral_cache_evictions_total\{tier="disk"\} 0$/m);
    has(/^coral_dsht_routing_table_contacts\{level="0"\} 0$/m);
  });
});

describe('the rules', () => {
  it('have unique names; alerts carry a severity, a summary and a description', () => {
    const names = rules.groups.flatMap((g) => g.rules.map((r) => r.record ?? r.alert));
    expect(new Set(names).size).toBe(names.length);
    const alerts = rules.groups.flatMap((g) => g.rules.filter((r) => r.alert));
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        'CoralNodeDown',
        'CoralHighOrigin5xx',
        'CoralLowHitRatio',
        'CoralDshtIsolated',
        'CoralDiskBudgetFull',
        'CoralMemoryBudgetFull',
        'CoralMembershipShrinking',
      ]),
    );
    for (const a of alerts) {
      expect(a.alert, a.alert).toMatch(/^Coral[A-Z]\w+$/);
      expect(['critical', 'warning', 'info'], a.alert).toContain(a.labels?.severity);
      expect(a.annotations?.summary, a.alert).toBeTruthy();
      expect(a.annotations?.description, a.alert).toBeTruthy();
    }
    for (const r of rules.groups.flatMap((g) => g.rules.filter((x) => x.record))) {
      expect(r.record).toMatch(/^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$/); // level:metric:operations
    }
  });
});

describe('the dashboard', () => {
  it('is importable: unique panel ids, queries on the datasource variable, an instance variable', () => {
    const panels = allPanels();
    expect(panels.length).toBeGreaterThan(10);
    const ids = panels.map((p) => p.id);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({
        name: 'DS_PROMETHEUS',
        type: 'datasource',
        pluginId: 'prometheus',
      }),
    ]);
    const vars = Object.fromEntries((dashboard.templating.list as Obj[]).map((v) => [v.name, v]));
    expect(vars.datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(vars.datasource.current.value).toBe('${DS_PROMETHEUS}');
    expect(vars.instance).toMatchObject({ type: 'query', includeAll: true, multi: true });
    for (const p of panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets) {
        expect(t.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
        expect(t.expr, p.title).toMatch(/instance=~"\$instance"/);
      }
    }
    // What the issue asks the dashboard to show, by panel title.
    const titles = panels.map((p) => p.title).join('\n');
    for (const t of [
      /hit ratio/i,
      /offload/i,
      /5xx/i,
      /duration/i,
      /routing table/i,
      /RPC/,
      /lookups/i,
      /DNS|answers by reason/i,
      /members/i,
      /budget/i,
      /refusals/i,
    ]) {
      expect(titles).toMatch(t);
    }
  });
});
