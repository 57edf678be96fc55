/**
 * Graceful shutdown of a real node: a response in flight when stop() begins still completes in
 * full, new connections are refused once the proxy has closed, and stop() resolves.
 */
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { SampleOrigin, fetchVia } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

// A slow origin: 256 KiB at 256 KiB/s, so the transfer is still running when stop() begins.
const origin = new SampleOrigin({
  host: '127.0.0.1',
  objects: 1,
  objectBytes: 256 * 1024,
  bottleneck: { latencyMs: 0, bytesPerSecond: 256 * 1024 },
});

afterAll(() => origin.close());

describe('CoralNode.stop()', () => {
  it('lets an in-flight response finish, then refuses new connections', async () => {
    const { port } = await origin.listen();
    const ip = `127.0.${randomSubnet()}.221`;
    const node = await CoralNode.start(
      loadConfig({
        env: {
          CORAL_HOST: ip,
          CORAL_DNS_HOST: ip,
          CORAL_ADMIN_HOST: ip,
          CORAL_DATA_DIR: tmpDir('shutdown'),
          CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
          CORAL_HOSTS: 'www.origin.test=127.0.0.1',
          CORAL_SHUTDOWN_GRACE_MS: '10000',
        },
      }),
      { services: realServices, logger: createLogger({ level: 'silent' }) },
    );
    const name = `www.origin.test.${port}.nyud.net`;
    const inFlight = fetchVia({ ip, port: 8090 }, name, '/obj/0');
    // stop() once the origin has started answering this request.
    await waitFor(() => origin.counts.get('/obj/0') === 1, 10_000, 'the origin request');
    const stopped = node.stop();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(res.body.equals(origin.body(0))).toBe(true);
    await stopped;
    const refused = await new Promise<boolean>((resolve) => {
      const s = connect(8090, ip);
      s.once('connect', () => {
        s.destroy();
        resolve(false);
      });
      s.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
    expect(node.view.readiness().ready).toBe(false);
  });
});
