import net from 'node:net';

import { ManualClock } from '@coral/testkit';
import { afterEach, describe, expect, it } from 'vitest';

import { SmartConnector } from '../../src/connect/index.js';
import type { Dial, DialTarget } from '../../src/connect/index.js';
import { TableResolver } from './helpers.js';

/** A dial that records and never touches the network: it always fails. */
function refusingSpy(): { dial: Dial; calls: DialTarget[] } {
  const calls: DialTarget[] = [];
  return {
    calls,
    dial: async (t) => {
      calls.push({ ...t });
      throw Object.assign(new Error(`spy: not connecting to ${t.address}`), { code: 'ESPY' });
    },
  };
}

const SSRF_TABLE = {
  'loop.evil.test': ['127.0.0.1'],
  'rfc1918.evil.test': ['10.0.0.1'],
  'metadata.evil.test': ['169.254.169.254'],
  'v6loop.evil.test': ['::1'],
  'all.evil.test': ['127.0.0.1', '10.0.0.1', '169.254.169.254', '::1'],
  'mapped.evil.test': ['::ffff:127.0.0.1', '::ffff:169.254.169.254'],
  'zero.evil.test': ['0.0.0.0', '::'],
};

describe('SSRF guard: refused addresses are filtered before any connection attempt', () => {
  const servers: net.Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  });

  it.each(Object.keys(SSRF_TABLE))('%s is refused with 403 and never dialled', async (name) => {
    const spy = refusingSpy();
    const c = new SmartConnector(
      { clock: new ManualClock(), resolver: new TableResolver(SSRF_TABLE), dial: spy.dial },
      {},
    );
    const err = await c.connect(name, 80).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'CORAL_ORIGIN_FORBIDDEN',
      status: 403,
      host: name,
      port: 80,
    });
    const refused = (err as { refused: Array<{ address: string }> }).refused.map((r) => r.address);
    expect(refused.sort()).toEqual([...SSRF_TABLE[name as keyof typeof SSRF_TABLE]].sort());
    expect(spy.calls).toEqual([]);
    expect(c.cacheSnapshot()).toEqual([]);
  });

  it('IP-literal origins go through the same policy', async () => {
    const spy = refusingSpy();
    const c = new SmartConnector({ clock: new ManualClock(), dial: spy.dial }, {});
    for (const host of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '::1', '[::1]', '100.64.1.1']) {
      await expect(c.connect(host, 8080)).rejects.toMatchObject({ code: 'CORAL_ORIGIN_FORBIDDEN' });
    }
    expect(spy.calls).toEqual([]);
  });

  it('the hosts overlay cannot bypass the policy', async () => {
    const spy = refusingSpy();
    const c = new SmartConnector(
      { clock: new ManualClock(), dial: spy.dial },
      { hosts: { 'origin.test': ['127.0.0.1'] } },
    );
    await expect(c.connect('origin.test', 80)).rejects.toMatchObject({
      code: 'CORAL_ORIGIN_FORBIDDEN',
    });
    expect(spy.calls).toEqual([]);
  });

  it('mixed answers: only the allowed addresses are dialled', async () => {
    const spy = refusingSpy();
    const resolver = new TableResolver({
      'mixed.test': ['10.0.0.1', '192.0.2.1', '169.254.169.254', '2001:db8::1', '127.0.0.1', '::1'],
    });
    const c = new SmartConnector({ clock: new ManualClock(), resolver, dial: spy.dial }, {});
    const err = await c.connect('mixed.test', 80).catch((e: unknown) => e);
    // Both allowed addresses were tried (and the spy failed them): unreachable, not forbidden.
    expect(err).toMatchObject({ code: 'CORAL_ORIGIN_UNREACHABLE' });
    expect(spy.calls.map((t) => t.address).sort()).toEqual(['192.0.2.1', '2001:db8::1']);
    expect(spy.calls.every((t) => t.port === 80)).toBe(true);
  });

  it('mixed answers: the allowed address wins and is what gets cached', async () => {
    // A dial that records the documentation address it was asked for and hands back a socket
    // to a local loopback server instead: nothing ever leaves the machine.
    const server = net.createServer((s) => s.on('error', () => {}));
    servers.push(server);
    await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port: 0 }, r));
    const localPort = (server.address() as net.AddressInfo).port;
    const calls: string[] = [];
    const dial: Dial = (t) =>
      new Promise((resolve, reject) => {
        calls.push(t.address);
        const s = net.connect({ host: '127.0.0.1', port: localPort });
        s.once('connect', () => resolve(s));
        s.once('error', reject);
      });
    const resolver = new TableResolver({ 'mixed.test': ['10.0.0.1', '192.0.2.1', '::1'] });
    const c = new SmartConnector({ clock: new ManualClock(), resolver, dial }, {});
    const sock = await c.connect('mixed.test', 80);
    sock.destroy();
    expect(calls).toEqual(['192.0.2.1']);
    expect(c.cacheSnapshot().map((e) => [e.key, e.address])).toEqual([
      ['mixed.test:80', '192.0.2.1'],
    ]);
  });

  it('allowPrivate lets a loopback origin through (a real loopback connection)', async () => {
    const server = net.createServer((s) => s.end('hello'));
    servers.push(server);
    await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port: 0 }, r));
    const port = (server.address() as net.AddressInfo).port;
    const resolver = new TableResolver({ 'loop.evil.test': ['127.0.0.1'] });
    const denied = new SmartConnector({ clock: new ManualClock(), resolver }, {});
    await expect(denied.connect('loop.evil.test', port)).rejects.toMatchObject({
      code: 'CORAL_ORIGIN_FORBIDDEN',
    });
    const allowed = new SmartConnector(
      { clock: new ManualClock(), resolver },
      { allowPrivate: true },
    );
    const sock = await allowed.connect('loop.evil.test', port);
    const data = await new Promise<string>((resolve) => {
      let buf = '';
      sock.on('data', (d: Buffer) => (buf += d.toString()));
      sock.on('end', () => resolve(buf));
    });
    expect(data).toBe('hello');
    sock.destroy();
  });

  it('allowPrivate still refuses unspecified and multicast addresses', async () => {
    const spy = refusingSpy();
    const resolver = new TableResolver({ 'zero.test': ['0.0.0.0', '::', '224.0.0.1', 'ff02::1'] });
    const c = new SmartConnector(
      { clock: new ManualClock(), resolver, dial: spy.dial },
      { allowPrivate: true },
    );
    await expect(c.connect('zero.test', 80)).rejects.toMatchObject({
      code: 'CORAL_ORIGIN_FORBIDDEN',
    });
    expect(spy.calls).toEqual([]);
  });
});
