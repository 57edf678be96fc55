/**
 * Issue 29, must-show 7 (a new user's defect: a node started with a wrong fleet key only logged
 * "no answer from …" forever). Three `coral-node` processes: a seed, a node started with a key the
 * fleet does not hold, and one with the fleet's key. The wrong-key node learns it from the seed's
 * key notice and says so at error — its key id, the address that refused it, CORAL_FLEET_KEYS —
 * its "not joined yet" line names the refusal instead of "no answer", and it counts it in
 * `coral_fleet_key_rejected_total`; the seed counts the notices it sent. The right-key node joins
 * and says nothing of the kind. Nothing waits on a duration: the test reads the logs and the
 * metrics until what it expects is there.
 */
import { readFileSync, rmSync } from 'node:fs';
import { Keyring } from '@coral/keyring';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, type FleetNode } from '../../src/fleet/index.js';
import { tmpDir, waitFor } from '../helpers.js';

const dataRoot = tmpDir('wrong-key');
let fleet: Fleet;
let passed = false;

beforeAll(async () => {
  fleet = new Fleet({ nodes: 1, dataRoot, logLevel: 'info', readyTimeoutMs: 30_000 });
  await fleet.start();
}, 60_000);

afterAll(async () => {
  await fleet?.stop();
  if (passed) rmSync(dataRoot, { recursive: true, force: true });
});

type Line = { level: number; msg: string; [field: string]: unknown };

/** The node's log lines so far (pino JSON). */
function lines(node: FleetNode): Line[] {
  const out: Line[] = [];
  for (const l of readFileSync(node.logFile, 'utf8').split('\n')) {
    try {
      out.push(JSON.parse(l) as Line);
    } catch {
      // a partial last line
    }
  }
  return out;
}

/** A counter's value in a node's /metrics (0 when absent). */
async function metric(node: FleetNode, series: string): Promise<number> {
  const text = await node.admin.text('/metrics');
  const escaped = series.replace(/[{}"=]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
}

describe('a node started with the wrong fleet key', () => {
  it('logs at error that the fleet does not accept its key id; a right-key node does not', async () => {
    const seed = fleet.nodes[0]!;
    const seedAddress = `${seed.ip}:${seed.dshtPort}`;
    const wrongKey = Keyring.generateKey();
    const wrongId = Keyring.keyId(wrongKey);
    const wrong = fleet.addNode({ CORAL_FLEET_KEYS: wrongKey });
    const right = fleet.addNode();

    const refused = await waitFor(
      () => lines(wrong).find((l) => l.level === 50 && l.component === 'fleet'),
      30_000,
      'the wrong-key node’s error line',
    );
    expect(refused.msg).toBe(
      `the fleet does not accept this node's key id ${wrongId} (answered by ${seedAddress}): ` +
        "check CORAL_FLEET_KEYS (fleet.keys or fleet.keysFile) — it must hold the fleet's current key",
    );
    expect(refused).toMatchObject({ keyId: wrongId, answeredBy: seedAddress });
    // Its join retries say why, instead of "no answer".
    const pending = await waitFor(
      () => lines(wrong).find((l) => l.level === 40 && l.msg.startsWith('not joined yet')),
      30_000,
      'a "not joined yet" line',
    );
    expect(pending.msg).toContain(
      `${seedAddress} does not accept this node's key id ${wrongId} (check CORAL_FLEET_KEYS)`,
    );
    expect(pending.msg).not.toContain('no answer');
    // Counted (once its admin API listens: the DSHT starts first).
    await waitFor(
      () =>
        metric(wrong, 'coral_fleet_key_rejected_total').then(
          (n) => n >= 1,
          () => false,
        ),
      30_000,
      'coral_fleet_key_rejected_total on the wrong-key node',
    );
    expect(await metric(seed, 'coral_dsht_key_notices_total{event="sent"}')).toBeGreaterThanOrEqual(
      1,
    );
    // One error line, not one per notice (reported at most once a minute).
    expect(lines(wrong).filter((l) => l.level === 50 && l.component === 'fleet')).toHaveLength(1);

    // The fleet's key: joins, ready, and not a word about keys being refused.
    await waitFor(
      () =>
        right.admin.json<{ ready: boolean }>('GET', '/readyz').then(
          (r) => r.ready,
          () => false,
        ),
      30_000,
      'the right-key node to be ready',
    );
    expect((await wrong.admin.json<{ ready: boolean }>('GET', '/readyz')).ready).toBe(false);
    expect(await metric(right, 'coral_fleet_key_rejected_total')).toBe(0);
    expect(lines(right).some((l) => /does not accept/.test(l.msg))).toBe(false);
    expect(lines(seed).some((l) => /does not accept/.test(l.msg))).toBe(false);
    passed = true;
  }, 60_000);
});
