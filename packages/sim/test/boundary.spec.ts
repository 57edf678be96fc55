/**
 * The simulation stays out of the product (issue 15): `@coral/dsht` exports nothing of it, no
 * shipped package depends on `@coral/sim` or imports it from its sources, and what `@coral/sim`
 * exports is found here, not there.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as dsht from '@coral/dsht';
import * as sim from '../src/index.js';

const packages = fileURLToPath(new URL('../../', import.meta.url));
const shipped = ['testkit', 'keyring', 'names', 'dsht', 'dnssrv', 'httpprx', 'node'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.ts$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

describe('the simulation boundary', () => {
  it('@coral/dsht exports none of the simulation', () => {
    const exported = new Set(Object.keys(dsht));
    for (const name of Object.keys(sim)) expect(exported.has(name), name).toBe(false);
    // Names the simulation used to export from dsht, and anything simulation-shaped.
    for (const name of exported) expect(name).not.toMatch(/^Sim|Topology|topology|[Pp]urity/);
  });

  it('exports the simulated network, the fleet and the topologies from @coral/sim', () => {
    for (const name of [
      'SimNetwork',
      'SimTransport',
      'uniformRttLatency',
      'SimFleet',
      'defaultIp',
      'geoTopology',
      'matrixTopology',
      'parseRttMatrix',
      'purityReport',
      'clusterPurity',
      'TopologyError',
    ])
      expect(sim, name).toHaveProperty(name);
  });

  it('no shipped package depends on @coral/sim or imports it', () => {
    for (const pkg of shipped) {
      const manifest = JSON.parse(readFileSync(join(packages, pkg, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
      };
      expect(Object.keys(manifest.dependencies ?? {}), pkg).not.toContain('@coral/sim');
      // Only the node's tests run simulated fleets (its DNS directory adapter over SimFleet), and
      // say so: a devDependency, never a dependency, never an import from its sources.
      if (pkg !== 'node')
        expect(Object.keys(manifest.devDependencies ?? {}), pkg).not.toContain('@coral/sim');
      for (const file of sourceFiles(join(packages, pkg, 'src'))) {
        const text = readFileSync(file, 'utf8');
        expect(text, file).not.toMatch(/from '@coral\/sim'|\/sim\/(src|dist)\//);
      }
    }
  });

  it('keeps the test graph a DAG: the packages below @coral/sim test without it', () => {
    // @coral/sim depends on them, so their tests must not use it; specs that need a simulated
    // fleet live in packages/sim/test (dsht's in packages/sim/test/dsht/).
    for (const pkg of ['testkit', 'keyring', 'names', 'dsht']) {
      for (const file of sourceFiles(join(packages, pkg, 'test'))) {
        const text = readFileSync(file, 'utf8');
        expect(text, file).not.toMatch(/from '@coral\/sim'|\/sim\/(src|dist|test)\//);
      }
    }
  });

  it('leaves no simulation source in packages/dsht/src', () => {
    const files = sourceFiles(join(packages, 'dsht', 'src')).map((f) =>
      f.slice(join(packages, 'dsht', 'src').length + 1),
    );
    expect(files.filter((f) => /sim|topology|bin\//.test(f))).toEqual([]);
    for (const file of files) {
      const text = readFileSync(join(packages, 'dsht', 'src', file), 'utf8');
      expect(text, file).not.toMatch(/class Sim\w+|ManualClock/);
    }
  });
});
