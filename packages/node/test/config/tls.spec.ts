/** The TLS fields of the configuration (issue 11): defaults, environment, cross-field checks. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';

describe('TLS configuration', () => {
  it('defaults: TLS port 8443, local CA on, upgrades followed, no files', () => {
    const c = loadConfig();
    expect(c.proxy.tlsPort).toBe(8443);
    expect(c.proxy.followHttpsUpgrade).toBe(true);
    expect(c.tls).toEqual({ originCa: [], localCa: true });
  });

  it('reads every TLS field from the environment', () => {
    const c = loadConfig({
      env: {
        CORAL_PROXY_TLS_PORT: '9443',
        CORAL_PROXY_FOLLOW_HTTPS_UPGRADE: 'false',
        CORAL_TLS_CERT: '/etc/coral/fullchain.pem',
        CORAL_TLS_KEY: '/etc/coral/privkey.pem',
        CORAL_TLS_ORIGIN_CA: '/etc/coral/a.pem,/etc/coral/b.pem',
        CORAL_TLS_LOCAL_CA: 'off',
      },
    });
    expect(c.proxy).toMatchObject({ tlsPort: 9443, followHttpsUpgrade: false });
    expect(c.tls).toEqual({
      cert: '/etc/coral/fullchain.pem',
      key: '/etc/coral/privkey.pem',
      originCa: ['/etc/coral/a.pem', '/etc/coral/b.pem'],
      localCa: false,
    });
  });

  it('reports a certificate without its key, a bad port and a port clash together', () => {
    expect(() =>
      loadConfig({
        env: { CORAL_TLS_CERT: '/x.pem', CORAL_PROXY_TLS_PORT: '70000' },
      }),
    ).toThrow(/proxy\.tlsPort: Too big[\s\S]*tls: tls\.cert and tls\.key go together/);
    expect(() => loadConfig({ env: { CORAL_PROXY_TLS_PORT: '8090' } })).toThrow(
      /proxy\.tlsPort: port 8090 is already used by proxy\.port/,
    );
    expect(() => loadConfig({ overrides: { tls: { originCa: [''] } } })).toThrow(
      /tls\.originCa\.0: must be the path of a PEM file/,
    );
  });
});
