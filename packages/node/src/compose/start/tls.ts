/**
 * Start step "proxy tls": the TLS listener, when a certificate is available — `tls.cert`/`tls.key`,
 * else the local development CA's (created on first start). Its renewals and SIGHUP reloads are
 * swapped into the running listener, and so are the fleet's session-ticket keys at each rotation.
 */
import { NodeCertificates, type TlsMaterial } from '../../tls/certificates.js';
import { TlsTicketKeys } from '../../trust/ticket-keys.js';
import type { NodeState } from '../state.js';
import { step } from './step.js';

export async function listenTls(s: NodeState, dataDir: string): Promise<void> {
  const { config, addresses } = s;
  const tlsLog = s.log('tls');
  const certificates = new NodeCertificates(
    {
      clock: s.clock,
      logger: tlsLog,
      onChange: (m) => {
        s.proxy.setTlsCertificate?.({ cert: m.certPem, key: m.keyPem });
        tlsLog.info(
          { cert: m.certPath, notAfter: new Date(m.notAfter).toISOString() },
          'TLS certificate replaced',
        );
      },
    },
    {
      zone: config.zone,
      dataDir,
      cert: config.tls.cert,
      key: config.tls.key,
      localCa: config.tls.localCa,
    },
  );
  const material = await step('tls', () => certificates.load());
  s.certificates = certificates;
  if (!material) return;
  const proxy = s.proxy;
  if (!proxy.listenTls) {
    tlsLog.warn('this proxy has no TLS listener: serving plain http only');
    return;
  }
  // The fleet's session-ticket keys, rotated into the listener (trust/ticket-keys.ts).
  const ticketKeys = new TlsTicketKeys(
    {
      clock: s.clock,
      logger: tlsLog,
      ...(s.trust.mode === 'keyed' ? { keyring: s.trust.keyring } : {}),
    },
    { rotationSeconds: config.tls.ticketKeyRotationSeconds },
  );
  await step('proxy tls', () =>
    proxy.listenTls!({
      cert: material.certPem,
      key: material.keyPem,
      port: config.proxy.tlsPort,
      host: addresses.bind.proxy,
      ticketKeys: ticketKeys.current(),
    }),
  );
  s.ticketKeys = ticketKeys;
  ticketKeys.start((keys) => proxy.setTlsTicketKeys?.(keys));
  s.listening.proxyTls = { host: addresses.bind.proxy, port: config.proxy.tlsPort };
}

/**
 * Read the TLS certificate again (SIGHUP): new handshakes get the new one, open connections are
 * kept. A file that cannot be used is logged and the current certificate stays.
 */
export async function reloadTls(s: NodeState): Promise<TlsMaterial | undefined> {
  if (!s.certificates || !s.listening.proxyTls) return undefined;
  try {
    return await s.certificates.reload();
  } catch (err) {
    s.logger.error({ err }, 'TLS reload failed: the current certificate stays in use');
    return undefined;
  }
}
