/**
 * Certificate authorities for tests over real loopback TLS: `@coral/runtime`'s CA helpers (the
 * ones a node's local development CA is made with) with a default name.
 *
 * ```ts
 * const ca = await makeTestCa();
 * const leaf = await issueCert(ca, { dnsNames: ['*.nyud.net', 'nyud.net'] });
 * https.createServer({ cert: leaf.chain, key: leaf.key }, handler);
 * tls.connect({ ca: ca.cert, servername: 'www-example-com.nyud.net', ... });
 * const first = await tlsVisit({ port, servername: 'a.nyud.net', ca: ca.cert });
 * const again = await tlsVisit({ port: otherPort, servername: 'a.nyud.net', ca: ca.cert,
 *   session: first.session });
 * again.reused; // true when the other server holds the same ticket keys
 * ```
 */
import { connect as tlsConnect } from 'node:tls';
import { makeCa, type CaOptions, type CertificateAuthority } from '@coral/runtime';

/** A CA made for a test. */
export type TestCa = CertificateAuthority;

/** A self-signed root CA, named `'Coral test CA'` unless `opts.name` says otherwise. */
export function makeTestCa(opts: Partial<CaOptions> = {}): Promise<TestCa> {
  return makeCa({ ...opts, name: opts.name ?? 'Coral test CA' });
}

export interface TlsVisitOptions {
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** SNI name, checked against the certificate. */
  servername: string;
  /** The CA(s) the server's chain is verified against (PEM). */
  ca: string | Buffer | (string | Buffer)[];
  /** A session from an earlier visit (`TlsVisit.session`): offered for resumption. */
  session?: Buffer;
  /** Pin the protocol version, e.g. `'TLSv1.2'` (default: what both ends support). */
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  /**
   * Bytes written once the handshake is done (e.g. an HTTP request with `Connection: close`);
   * the visit then also waits for the server to end the connection and returns what it sent.
   */
  request?: string;
  /** Real time to give up after (default 10 s): a hung server fails the test, never a wait. */
  limitMs?: number;
}

/** What {@link tlsVisit} saw. */
export interface TlsVisit {
  /** `isSessionReused()`: the handshake resumed the offered session. */
  reused: boolean;
  /**
   * The session to offer next time: the server's first ticket (or session) of this visit, else the
   * one offered when it resumed, else undefined.
   */
  session: Buffer | undefined;
  /** `getProtocol()`, e.g. `'TLSv1.3'`. */
  protocol: string | null;
  /** What the server sent after the handshake (latin1), when `request` was given. */
  response: string;
}

/**
 * One real TLS connection (`tls.connect`, verified against `ca`): resolves once the handshake is
 * done and the server's session ticket has arrived (TLS 1.3 sends it after the handshake; a
 * resumed handshake need not send one) — and,
 * with `request`, once the server ended the connection — then closes it. Offer the returned
 * `session` to a later visit (at the same or another server) to see whether it resumes.
 */
export function tlsVisit(options: TlsVisitOptions): Promise<TlsVisit> {
  const { limitMs = 10_000 } = options;
  return new Promise((resolve, reject) => {
    let session: Buffer | undefined;
    let secure = false;
    let ended = false;
    let response = '';
    const socket = tlsConnect({
      host: options.host ?? '127.0.0.1',
      port: options.port,
      servername: options.servername,
      ca: options.ca,
      ...(options.session ? { session: options.session } : {}),
      ...(options.minVersion ? { minVersion: options.minVersion } : {}),
      ...(options.maxVersion ? { maxVersion: options.maxVersion } : {}),
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`tlsVisit ${options.servername}:${options.port}: no ticket within ${limitMs} ms`),
      );
    }, limitMs);
    const settle = (): void => {
      // A resumed handshake may bring no new ticket: the offered session is still the one to use.
      if (!secure || (session === undefined && !ended && !socket.isSessionReused())) return;
      if (options.request !== undefined && !ended) return;
      clearTimeout(timer);
      const seen: TlsVisit = {
        reused: socket.isSessionReused(),
        session: session ?? (socket.isSessionReused() ? options.session : undefined),
        protocol: socket.getProtocol(),
        response,
      };
      socket.destroy();
      resolve(seen);
    };
    socket.on('session', (s: Buffer) => {
      session ??= s;
      settle();
    });
    socket.on('secureConnect', () => {
      secure = true;
      if (options.request !== undefined) socket.write(options.request);
      settle();
    });
    socket.on('data', (chunk: Buffer) => {
      response += chunk.toString('latin1');
    });
    socket.on('end', () => {
      ended = true;
      settle();
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}
