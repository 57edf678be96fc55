/**
 * The fleet purge's peer protocol (fleet-purge.ts, catch-up.ts): the path on every member's admin
 * port, a purge entry as a member sends it and a page of a member's log as it answers a pull, each
 * checked with zod before use, and the bounds they are held to.
 */
import { REPLAY_WINDOW_MS } from '@coral/keyring';
import { z } from 'zod';
import { PurgeError } from '../errors.js';
import { canonicalSpec, type PurgeSpec } from './match.js';
import type { LoggedEntry, PurgeEntry } from './purge-log.js';

/** Path of the peer endpoints on every member's admin port. */
export const PEER_PURGE_PATH = '/v1/peer/purges';
/** Entries per page of a pull. */
export const PURGE_PAGE_LIMIT = 1_000;
/**
 * Clock skew allowed between members: a pulled purge also drops responses stored this long after
 * its time, and times later than now plus this are refused. The fleet's signatures accept the
 * same skew (@coral/keyring REPLAY_WINDOW_MS).
 */
export const PURGE_SKEW_MS = REPLAY_WINDOW_MS;
/** Longest value (URL, prefix or tag) of a purge. */
export const MAX_PURGE_VALUE_LENGTH = 8_192;

const entrySchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{32}$/),
  at: z.number().int().nonnegative(),
  kind: z.enum(['url', 'prefix', 'tag']),
  value: z.string().min(1).max(MAX_PURGE_VALUE_LENGTH),
  origin: z.string().regex(/^[0-9a-f]{1,128}$/),
});
/** A page of a member's log as it arrives (checked further by the catch-up: catch-up.ts). */
export const pageSchema = z.object({
  log: z.string().regex(/^[0-9a-f]{1,64}$/),
  first: z.number().int().positive(),
  last: z.number().int().nonnegative(),
  floor: z.number().int().nonnegative(),
  completeSince: z.number().int().nonnegative(),
  entries: z.array(entrySchema.extend({ seq: z.number().int().positive() })).max(PURGE_PAGE_LIMIT),
  more: z.boolean(),
});
export type Page = z.infer<typeof pageSchema>;

/** One page of a member's log, as {@link FleetPurge.page} answers it. */
export interface PurgePage {
  log: string;
  first: number;
  last: number;
  floor: number;
  completeSince: number;
  entries: LoggedEntry[];
  more: boolean;
}

/** A purge entry from a member's body; throws PurgeError when it is not one. */
export function parseEntry(body: string): PurgeEntry {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    throw new PurgeError('CORAL_ERR_PURGE_INVALID', 'the purge entry is not JSON');
  }
  const r = entrySchema.safeParse(raw);
  if (!r.success) {
    throw new PurgeError(
      'CORAL_ERR_PURGE_INVALID',
      `not a purge entry: ${r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`,
    );
  }
  let spec: PurgeSpec;
  try {
    spec = canonicalSpec({ kind: r.data.kind, value: r.data.value });
  } catch (err) {
    throw new PurgeError('CORAL_ERR_PURGE_INVALID', (err as Error).message);
  }
  return { ...r.data, ...spec };
}
