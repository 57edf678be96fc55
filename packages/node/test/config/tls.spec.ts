/** The TLS fields of the configuration (issue 11): defaults, environment, cross-field checks. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';

describe('TLS configuration', () => {
  it('defaults: TLS port 8443, local CA on, upgrades followed, no files, ticket keys for 12 h', () => {
    const c = loadConfig();
    expect(c.proxy.tlsPort).toBe(8443);
    expect(c.proxy.followHttpsUpgrade).toBe(true);
    expect(c.tls).toEqual({ originCa: [], localCa: true, ticketKeyRotationSeconds: 43_200 });
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
        CORAL_TLS_TICKET_KEY_ROTATION_SECONDS: '3600',
      },
    });
    expect(c.proxy).toMatchObject({ tlsPort: 9443, followHttpsUpgrade: false });
    expect(c.tls).toEqual({
      cert: '/etc/coral/fullchain.pem',
      key: '/etc/coral/privkey.pem',
      originCa: ['/etc/coral/a.pem', '/etc/coral/b.pem'],
      localCa: false,
      ticketKeyRotationSeconds: 3600,
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

  it('accepts a ticket-key rotation of 60 s to 7 days, and reports one outside with its source', () => {
    const at = (v: string) => loadConfig({ env: { CORAL_TLS_TICKET_KEY_ROTATION_SECONDS: v } });
    expect(at('60').tls.ticketKeyRotationSeconds).toBe(60);
    expect(at('604800').tls.ticketKeyRotationSeconds).toBe(604_800);
    expect(() => at('59')).toThrow(
      /tls\.ticketKeyRotationSeconds: Too small[\s\S]*CORAL_TLS_TICKET_KEY_ROTATION_SECONDS/,
    );
    expect(() => at('604801')).toThrow(/tls\.ticketKeyRotationSeconds: Too big/);
    expect(() => at('1h')).toThrow(/tls\.ticketKeyRotationSeconds/);
    expect(() => loadConfig({ overrides: { tls: { ticketKeyRotationSeconds: 90.5 } } })).toThrow(
      /tls\.ticketKeyRotationSeconds/,
    );
  });
});
