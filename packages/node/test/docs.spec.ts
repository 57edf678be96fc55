import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV_FIELDS, envName, loadConfig } from '../src/config/index.js';
import { ERROR_CODES as PROXY_ERROR_CODES } from '@coral/httpprx';
import { ERROR_CODES } from '../src/errors.js';
import { CONNECT_ERROR_CODES } from '../../httpprx/src/connect/index.js';
import { DNS_ERROR_CODES } from '../../dnssrv/src/errors.js';
import { ERROR_CODES as DSHT_ERROR_CODES } from '../../dsht/src/errors.js';
import { CLUSTER_ERROR_CODES } from '../../dsht/src/cluster/errors.js';
import { TOPOLOGY_ERROR_CODES } from '../../sim/src/topology/errors.js';

const doc = (name: string) =>
  readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

describe('docs', () => {
  it('lists every error code in docs/node.md and in the docs/errors.md index', () => {
    const node = doc('node.md');
    const index = doc('errors.md');
    for (const code of ERROR_CODES) {
      expect(node, code).toContain(`\`${code}\``);
      expect(index, code).toContain(`\`${code}\``);
    }
  });

  it('indexes every code of the other packages in docs/errors.md', () => {
    const index = doc('errors.md');
    const codes = [
      ...Object.keys(PROXY_ERROR_CODES),
      ...CONNECT_ERROR_CODES,
      ...DNS_ERROR_CODES,
      ...DSHT_ERROR_CODES,
      ...CLUSTER_ERROR_CODES,
      ...TOPOLOGY_ERROR_CODES,
    ];
    for (const code of codes) expect(index, code).toContain(`\`${code}\``);
  });

  it('documents every configuration field and its environment variable', () => {
    const config = doc('configuration.md');
    for (const [path] of ENV_FIELDS) {
      expect(config, path).toContain(`| \`${path}\` | \`${envName(path)}\` |`);
    }
  });

  it('has a YAML example in docs/configuration.md that loads', () => {
    const yaml = /```yaml\n([\s\S]*?)```/.exec(doc('configuration.md'))?.[1];
    expect(yaml).toBeDefined();
    const file = join(mkdtempSync(join(tmpdir(), 'coral-doc-')), 'example.yaml');
    writeFileSync(file, yaml!);
    const c = loadConfig({ file });
    expect(c.dns.nameservers).toHaveLength(2);
    expect(c.dns.views[0]).toEqual({ cidr: '10.0.0.0/8', region: 'eu-west' });
  });
});
