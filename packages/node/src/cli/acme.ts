/**
 * `coral-node acme set|remove|list`: the ACME DNS-01 TXT values of `_acme-challenge.<zone>`,
 * through a running node's admin API (which passes them on to the fleet). Made to be called from
 * an ACME client's DNS hook (lego's `exec` provider, acme.sh's `dns_*` functions, certbot's
 * `--manual-auth-hook`); see docs/admin-api.md, "ACME DNS-01".
 *
 * A change that some live member did not apply exits 1 after printing the answer: the CA may ask
 * that member's DNS server, so the order would fail later and less clearly.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { AdminClient } from './client.js';

interface Propagated {
  error?: { code?: string };
  propagation?: { complete?: boolean; mode?: string; reason?: string };
}

export function addAcmeCommands(
  program: Command,
  client: () => AdminClient,
  print: (value: unknown) => void,
  /** The status of an answer some live member did not apply (printed, then exit 1). */
  incompleteStatus: number,
  fail: (message: string) => void,
): void {
  const acme = program
    .command('acme')
    .description('ACME DNS-01: the TXT values answered at _acme-challenge.<zone> by the fleet');
  const report = (answer: Propagated) => {
    print(answer);
    const p = answer.propagation;
    if (p && p.complete === false) {
      const code = answer.error?.code ?? 'CORAL_ERR_FLEET_INCOMPLETE';
      fail(
        p.mode === 'off'
          ? `${code}: not passed on to the fleet: ${p.reason ?? 'no fleet keys'}`
          : `${code}: not applied by every live member (see propagation.members)${p.reason ? `: ${p.reason}` : ''}`,
      );
    }
  };
  acme
    .command('set <value>')
    .description('answer VALUE (the key authorization digest) at _acme-challenge.<zone>')
    .option('--ttl <seconds>', 'how long the value stays unless removed (default 600)', (v) => {
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1 || n > 86_400) {
        throw new InvalidArgumentError('--ttl must be an integer from 1 to 86400');
      }
      return n;
    })
    .action(async (value: string, opts: { ttl?: number }) => {
      const body = opts.ttl === undefined ? { value } : { value, ttlSeconds: opts.ttl };
      const accept = [incompleteStatus];
      report(await client().json<Propagated>('POST', '/v1/acme/challenges', body, accept));
    });
  acme
    .command('remove [value]')
    .description('stop answering VALUE (or, with --all, every value)')
    .option('--all', 'remove every value of the zone')
    .action(async (value: string | undefined, opts: { all?: boolean }) => {
      if ((value === undefined) === !opts.all) {
        fail('acme remove: give a VALUE or --all (not both)');
        return;
      }
      const path =
        value === undefined
          ? '/v1/acme/challenges'
          : `/v1/acme/challenges/${encodeURIComponent(value)}`;
      report(await client().json<Propagated>('DELETE', path, undefined, [incompleteStatus]));
    });
  acme
    .command('list')
    .description('the values this node answers now, with their expiry')
    .action(async () => print(await client().json('GET', '/v1/acme/challenges')));
}
