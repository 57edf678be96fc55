/**
 * Joining the fleet through the bootstrap list. The list is resolved at start (names may not
 * resolve yet: a member still starting); while the node has no contact it retries — the first
 * delay {@link BOOTSTRAP_RETRY_MS}, doubling up to {@link BOOTSTRAP_RETRY_MAX_MS} — resolving the
 * names again and pinging them, then runs the self-lookup. Each wait says why the node is not
 * joined yet (at `warn` while that keeps it from being ready) — naming a bootstrap address that
 * answered with a key notice (it does not accept this node's key id) instead of "no answer".
 */
import type { Clock } from '@coral/runtime';
import type { Logger } from 'pino';
import {
  resolveBootstrap,
  type BootstrapResolution,
  type NameLookup,
  type ResolvedAddresses,
} from '../config/resolve.js';
import type { CoralConfig } from '../config/schema.js';
import type { DshtPort } from './ports.js';

export const BOOTSTRAP_RETRY_MS = 500;
export const BOOTSTRAP_RETRY_MAX_MS = 10_000;

export interface FleetJoinComponents {
  config: CoralConfig;
  addresses: ResolvedAddresses;
  clock: Clock;
  logger: Logger;
  lookup: NameLookup | undefined;
  /** Is the node stopping (no retry then)? */
  stopping: () => boolean;
  /** Called once the node joined on a retry. */
  onJoined(): void;
}

export class FleetJoin {
  readonly #c: FleetJoinComponents;
  #bootstrap: BootstrapResolution = { contacts: [], unresolved: [], self: false };
  #joined = false;
  #attempts = 0;
  #retry: { cancel(): void } | undefined;
  #dsht: DshtPort | undefined;

  constructor(components: FleetJoinComponents) {
    this.#c = components;
  }

  /** The bootstrap list as last resolved. */
  get bootstrap(): BootstrapResolution {
    return this.#bootstrap;
  }

  /** Ready as far as joining goes: it has a contact, or is a seed / has no bootstrap list. */
  get joined(): boolean {
    return this.#joined;
  }

  /** The node found itself in its bootstrap list (a seed). */
  get seed(): boolean {
    return this.#bootstrap.self;
  }

  /** Bootstrap entries other than this node itself (resolved or not yet). */
  get hasOtherMembers(): boolean {
    return this.#bootstrap.contacts.length + this.#bootstrap.unresolved.length > 0;
  }

  /** Resolve the bootstrap list (before the DSHT starts with its contacts). */
  async resolve(): Promise<BootstrapResolution> {
    const { config, lookup } = this.#c;
    this.#bootstrap = await resolveBootstrap(config, this.#selfAddresses(), lookup);
    return this.#bootstrap;
  }

  /**
   * After the DSHT started: joined when it has a contact; a node with no bootstrap list, or that
   * finds itself in the list (a seed), is ready on its own and meets the others as they come.
   * Otherwise retry in the background.
   */
  started(dsht: DshtPort): void {
    this.#dsht = dsht;
    const contacts = dsht.routes(0).length;
    this.#joined = contacts > 0 || this.#c.config.bootstrap.length === 0 || this.#bootstrap.self;
    if (contacts === 0 && this.hasOtherMembers) {
      this.#logPending(BOOTSTRAP_RETRY_MS);
      this.#schedule(dsht, BOOTSTRAP_RETRY_MS);
    }
  }

  cancel(): void {
    this.#retry?.cancel();
  }

  /** The addresses a bootstrap entry naming this node itself resolves to. */
  #selfAddresses(): { ips: string[]; port: number } {
    const { advertiseIp, bind } = this.#c.addresses;
    return { ips: [...new Set([advertiseIp, bind.dsht])], port: this.#c.config.dsht.port };
  }

  #logPending(retryInMs: number): void {
    const b = this.#bootstrap;
    // A key notice is an unauthenticated hint: it only changes what this line says.
    const auth = this.#dsht?.authState();
    const rejected = auth?.keyRejection;
    // Said of the key this node signs with now, by one of the addresses it is trying.
    const refusing =
      rejected && rejected.keyId === auth.primaryKeyId && b.contacts.includes(rejected.from)
        ? rejected
        : undefined;
    const silent = refusing ? b.contacts.filter((c) => c !== refusing.from) : b.contacts;
    this.#c.logger[this.#joined ? 'debug' : 'warn'](
      {
        attempt: this.#attempts,
        retryInMs,
        unresolved: b.unresolved,
        unanswered: silent,
        ...(refusing ? { keyRejectedBy: refusing.from, keyId: refusing.keyId } : {}),
      },
      `not joined yet: ${[
        b.unresolved.length > 0
          ? `bootstrap ${b.unresolved.map((u) => `${u.entry} (${u.reason})`).join(', ')} did not resolve`
          : '',
        refusing
          ? `${refusing.from} does not accept this node's key id ${refusing.keyId} (check CORAL_FLEET_KEYS)`
          : '',
        silent.length > 0 ? `no answer from ${silent.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join('; ')}; retrying in ${retryInMs} ms`,
    );
  }

  #schedule(dsht: DshtPort, delayMs: number): void {
    const { clock, logger, stopping } = this.#c;
    this.#retry = clock.setTimeout(() => {
      void (async () => {
        if (stopping()) return;
        this.#attempts++;
        if (dsht.routes(0).length === 0) {
          // A lookup that fails outright (EMFILE, ENOMEM) is this attempt's loss, not the node's:
          // the entries resolved last time are pinged and the retries go on.
          await this.resolve().catch((err: unknown) =>
            logger.warn({ err }, 'resolving the bootstrap list failed'),
          );
          await Promise.all(
            this.#bootstrap.contacts.map((entry) => {
              const colon = entry.lastIndexOf(':');
              const ip = entry.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
              return dsht.ping({ ip, port: Number(entry.slice(colon + 1)) }).catch(() => 0);
            }),
          );
        }
        if (stopping()) return;
        if (dsht.routes(0).length > 0) {
          // A failed self-lookup still leaves the contacts the pings verified: joined, with a note.
          await dsht
            .join()
            .catch((err: unknown) =>
              logger.warn({ err }, 'self-lookup after the bootstrap pings failed'),
            );
          this.#joined = true;
          logger.info(
            { contacts: dsht.routes(0).length, attempts: this.#attempts },
            'joined the fleet',
          );
          this.#c.onJoined();
        } else {
          const next = Math.min(delayMs * 2, BOOTSTRAP_RETRY_MAX_MS);
          this.#logPending(next);
          this.#schedule(dsht, next);
        }
      })();
    }, delayMs);
  }
}
