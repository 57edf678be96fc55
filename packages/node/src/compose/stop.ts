/**
 * A node's stop sequence (drain): first the DSHT's LEAVE, so members stop naming this node in DNS
 * answers, choosing it as designated fetcher and asking it for peer copies while it still serves
 * what is under way; then DNS (clients move to other nodes), the purge catch-up, the proxy
 * (in-flight responses get `shutdownGraceMs`), the access log (every line written), the purge log, the DSHT (its store flushed to
 * disk) and the admin API — each only if it had started, each bounded by `shutdownGraceMs` + 1 s.
 */
import type { NodeState } from './state.js';

export async function stopSequence(s: NodeState): Promise<void> {
  s.join.cancel();
  s.purgeGate?.stop();
  s.adminRecords?.stop();
  s.heapTrimmer?.stop();
  s.certificates?.stop();
  s.ticketKeys?.stop();
  // Each service bounds its own close by shutdownGraceMs; this outer bound only catches a hang.
  const grace = s.config.shutdownGraceMs + 1_000;
  const bounded = async (name: string, fn: () => Promise<unknown>) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        s.logger.warn({ service: name, graceMs: grace }, 'shutdown step took too long');
        resolve();
      }, grace);
    });
    try {
      await Promise.race([fn(), timeout]);
    } catch (err) {
      s.logger.warn({ err, service: name }, 'error while stopping');
    } finally {
      clearTimeout(timer);
    }
  };
  const { dsht, dns, purges, proxy, purgeLog, admin } = s;
  if (dsht) await bounded('dsht leave', () => dsht.leave());
  if (dns) await bounded('dns', () => dns.close());
  if (purges) await bounded('purge', () => purges.stop());
  if (proxy) await bounded('proxy', () => proxy.close());
  // After the proxy: the last responses' lines are in; every accepted line is written.
  const { accessLog } = s;
  if (accessLog) {
    const pendingBytes = accessLog.stats.sink.pendingBytes;
    if (pendingBytes > 0) s.logger.info({ pendingBytes }, 'writing the access log out');
    await bounded('access log', () => accessLog.close());
  }
  if (purgeLog) await bounded('purge log', () => purgeLog.close());
  if (dsht) await bounded('dsht', () => dsht.stop());
  if (admin) await bounded('admin', () => admin.close());
  s.metrics.close();
  s.logger.info('coral node stopped');
}
