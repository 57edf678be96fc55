/**
 * `coral-node logs --follow`: the node's access lines as they happen, from the admin API's live
 * stream (`GET /v1/logs`, NDJSON), filtered on the node (`--host`, `--status`, `--cache`,
 * `--client`), printed as they came (`json`) or in the combined format (`--format combined`).
 * The node keeps no history: lines start with the request after the stream opened. `--lines N`
 * stops after N lines (scripts); `--follow` runs until interrupted or the node ends the stream.
 * A stream the node cut (it drops a reader that falls behind) exits 1, saying so.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { formatCombined, parseJsonLine } from '@coral/accesslog';
import type { AdminClient } from './client.js';

interface LogsOptions {
  follow?: boolean;
  lines?: number;
  format: 'json' | 'combined';
  host?: string;
  status?: string;
  cache?: string;
  client?: string;
}

/** The `/v1/logs` path with the filters given. */
export function logsPath(opts: Pick<LogsOptions, 'host' | 'status' | 'cache' | 'client'>): string {
  const q = new URLSearchParams();
  for (const k of ['host', 'status', 'cache', 'client'] as const) {
    const v = opts[k];
    if (v !== undefined) q.set(k, v);
  }
  const s = q.toString();
  return s ? `/v1/logs?${s}` : '/v1/logs';
}

export function addLogsCommand(
  program: Command,
  client: () => AdminClient,
  out: { write(s: string): unknown },
  fail: (message: string) => void,
  /** Aborts the stream (the CLI's SIGINT); default none. */
  signal?: AbortSignal,
): void {
  program
    .command('logs')
    .description(
      "stream the node's access lines as they happen (the live log stream, GET /v1/logs)",
    )
    .option('-f, --follow', 'keep streaming until interrupted')
    .option('-n, --lines <n>', 'stop after this many lines', (v: string) => {
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1) throw new InvalidArgumentError('--lines must be 1 or more');
      return n;
    })
    .option(
      '--format <format>',
      'json (as the node writes them) or combined',
      (v: string) => {
        if (v !== 'json' && v !== 'combined') {
          throw new InvalidArgumentError('--format must be json or combined');
        }
        return v;
      },
      'json',
    )
    .option('--host <names>', 'only these hosts (Coralized or origin; .example.com: and under it)')
    .option('--status <classes>', 'only these status classes, e.g. 4xx,5xx')
    .option(
      '--cache <results>',
      'only these cache results: hit, stale, revalidated, expired, miss, bypass, error',
    )
    .option('--client <cidrs>', 'only clients in these prefixes, e.g. 203.0.113.0/24')
    .action(async (opts: LogsOptions) => {
      if (!opts.follow && opts.lines === undefined) {
        fail(
          'logs: the node keeps no history; --follow streams lines as they happen (or --lines N)',
        );
        return;
      }
      const res = await client().stream(logsPath(opts), signal);
      let left = opts.lines ?? Infinity;
      let rest = '';
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body ?? []) {
          rest += decoder.decode(chunk as Uint8Array, { stream: true });
          let nl: number;
          while ((nl = rest.indexOf('\n')) >= 0 && left > 0) {
            const line = rest.slice(0, nl);
            rest = rest.slice(nl + 1);
            if (line === '') continue;
            const r = opts.format === 'combined' ? parseJsonLine(line) : undefined;
            out.write(r ? formatCombined(r) : `${line}\n`);
            left--;
          }
          if (left <= 0) break;
        }
      } catch (err) {
        if (signal?.aborted) return;
        fail(
          `logs: the stream was cut (${(err as Error).message}): the node drops a reader that ` +
            'falls behind, or it stopped',
        );
        return;
      }
      if (left > 0 && opts.lines !== undefined && !signal?.aborted) {
        fail('logs: the node ended the stream (it is stopping)');
      }
    });
}
