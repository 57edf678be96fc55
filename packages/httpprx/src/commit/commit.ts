/**
 * Committing a completed transfer: its metadata record is built, the body made visible in the
 * store (atomically, ../store), the copy kept hot when small, and the object announced `complete`.
 * Only from here on does Cache-Status say `stored` (for requests answered after this point).
 * The other changes a fetch makes to the store are here too: a 304 freshening the stored response
 * (RFC 9111 §4.3.4) and a full response to a revalidation dropping the one it replaces (§4.3.3).
 */
import { currentAge } from '../cache/policy.js';
import { secondaryKey } from '../cache/vary.js';
import { createHash } from 'node:crypto';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { CODED_FIELD, codedOf, codedValue, shouldCompress } from '../kit/encoding.js';
import { gunzipWhole, gzipOnce } from '../serve/coding.js';
import { makeHot } from '../serve/entry.js';
import type { BodyWriter, StoredMeta } from '../store/types.js';
import type { Transfer, TransferHead } from '../transfer/transfer.js';
import { announceComplete, withdraw } from './announce.js';

/** A failing disk (EMFILE, ENOSPC...) is logged at most once in this long (ms); every failure is counted. */
export const STORE_ERROR_LOG_INTERVAL_MS = 10_000;

/** Per proxy: when a store failure was last logged, and how many since went unlogged. */
const storeErrorLog = new WeakMap<ProxyCore, { last: number; unlogged: number }>();

/**
 * The disk could not take a fetched response (descriptors exhausted, disk full, I/O error): its
 * clients got it whole (the transfer ended before the commit), nothing of it is kept — the store
 * never makes a body visible that is not complete — and the `fetching` announcement is taken back
 * so members do not come for it. Counted every time; logged at most once per
 * `STORE_ERROR_LOG_INTERVAL_MS`, with how many went unlogged, since a full disk fails every commit.
 */
function storeFailed(core: ProxyCore, ctx: RequestCtx, e: unknown): void {
  storeErrorNoted(
    core,
    ctx.url,
    e,
    'cache store failed: the response was served without being stored',
  );
  if (!core.store.has(ctx.primary)) void withdraw(core, ctx.keyBytes);
}

/** Count a store failure by its code; log it at most once per STORE_ERROR_LOG_INTERVAL_MS. */
function storeErrorNoted(core: ProxyCore, url: string, e: unknown, message: string): void {
  const code = (e as { code?: unknown }).code;
  const label = typeof code === 'string' && /^[A-Z0-9_]{1,32}$/.test(code) ? code : 'error';
  core.metrics?.storeFailed?.(label);
  const now = core.clock.now();
  let state = storeErrorLog.get(core);
  if (!state) storeErrorLog.set(core, (state = { last: -Infinity, unlogged: 0 }));
  if (now - state.last >= STORE_ERROR_LOG_INTERVAL_MS) {
    core.log.warn({ url, code: label, err: String(e), unlogged: state.unlogged }, message);
    state.last = now;
    state.unlogged = 0;
  } else {
    state.unlogged++;
  }
}

/** The variant key (hex) of a response to `ctx` varying on `head.vary`. */
export function variantKey(
  primary: string,
  head: Pick<TransferHead, 'vary' | 'varyValues'>,
): string {
  return primary + Buffer.from(secondaryKey(head.vary, head.varyValues)).toString('hex');
}

async function admitted(
  core: ProxyCore,
  candidate: { url: string; headers: StoredMeta['headers']; fetchStartedAt: number },
): Promise<boolean> {
  if (!core.admit) return true;
  try {
    return await core.admit(candidate);
  } catch (e) {
    core.log.warn({ url: candidate.url, err: String(e) }, 'admit check failed: not stored');
    return false;
  }
}

/** Not stored: say so, and take back the `fetching` announcement unless another copy is held. */
function refused(core: ProxyCore, ctx: RequestCtx): void {
  core.log.info({ url: ctx.url }, 'not stored: purged while it was being fetched');
  core.metrics?.commitRefused?.();
  if (!core.store.has(ctx.primary)) {
    void withdraw(core, ctx.keyBytes);
  }
}

/** Clock time the response stops being fresh (ms). */
export function freshUntil(now: number, lifetime: number, facts: StoredMeta['facts']): number {
  return now + (lifetime - currentAge(facts, now)) * 1000;
}

/** A coded body must save at least this fraction of the identity bytes to be kept coded. */
export const COMPRESS_MIN_SAVING = 0.1;

/** What is committed: the transfer's own body, or the gzip body written in its place. */
interface Representation {
  writer: BodyWriter;
  headers: StoredMeta['headers'];
  size: number;
  sha256: string;
}

/**
 * Compress once, at commit (../kit/encoding.ts): the identity body is read back whole, gzipped in
 * the libuv pool and written to a body of its own, which is committed in place of the transfer's
 * (the transfer's readers keep reading the identity bytes; its writer is discarded on release).
 * Undefined — the identity body is stored — when the saving is too small or the disk refused it.
 */
async function compressed(
  core: ProxyCore,
  url: string,
  writer: BodyWriter,
  headers: StoredMeta['headers'],
  body: { size: number; sha256: string },
): Promise<Representation | undefined> {
  const gz = await gzipOnce(await writer.read(0, body.size));
  if (gz.length > body.size * (1 - COMPRESS_MIN_SAVING)) return undefined;
  const w = core.store.begin();
  try {
    await w.write(gz);
  } catch (e) {
    await w.release();
    storeErrorNoted(
      core,
      url,
      e,
      'cache store failed: the gzip copy was not stored, the identity body is',
    );
    return undefined;
  }
  const h: StoredMeta['headers'] = { ...headers, 'content-encoding': 'gzip' };
  delete h['content-length'];
  h[CODED_FIELD] = codedValue({ coding: 'gzip', length: body.size, sha256: body.sha256 });
  return {
    writer: w,
    headers: h,
    size: gz.length,
    sha256: createHash('sha256').update(gz).digest('hex'),
  };
}

/**
 * A coded copy from a member: its identity form is checked once against the length and hash the
 * member declared for it (the bytes were checked against the record; the declaration was not).
 */
async function codedCopyHolds(writer: BodyWriter, headers: StoredMeta['headers'], size: number) {
  const coded = codedOf(headers);
  if (!coded) return false;
  try {
    const plain = await gunzipWhole(await writer.read(0, size));
    return (
      plain.length === coded.length &&
      createHash('sha256').update(plain).digest('hex') === coded.sha256
    );
  } catch {
    return false;
  }
}

/** A transfer whose body arrived whole, to commit (`commitTransfer`). */
export interface CompletedTransfer {
  ctx: RequestCtx;
  transfer: Transfer;
  head: TransferHead;
  /** The store's writer of the body (its temp file, or memory). */
  writer: BodyWriter;
  /**
   * The body's size and SHA-256, this node's freshness lifetime for it (s), and the clock time
   * its upstream request was sent (what `admit` judges).
   */
  body: { size: number; sha256: string; lifetime: number; fetchStartedAt: number };
}

/** Commit `done` (module comment): the stored record, or undefined when it is not kept. */
export async function commitTransfer(
  core: ProxyCore,
  done: CompletedTransfer,
): Promise<StoredMeta | undefined> {
  const { ctx, transfer: t, head, writer, body } = done;
  const candidate = { url: ctx.url, headers: head.headers, fetchStartedAt: body.fetchStartedAt };
  if (!(await admitted(core, candidate))) {
    refused(core, ctx);
    return undefined;
  }
  let rep: Representation = { writer, headers: head.headers, ...body };
  if (head.headers[CODED_FIELD] !== undefined) {
    if (!(await codedCopyHolds(writer, head.headers, body.size))) {
      core.log.warn(
        { url: ctx.url },
        'not stored: a coded copy whose identity form does not match',
      );
      if (!core.store.has(ctx.primary)) void withdraw(core, ctx.keyBytes);
      return undefined;
    }
  } else if (core.compress && shouldCompress(head.status, head.headers, body.size)) {
    try {
      rep = (await compressed(core, ctx.url, writer, head.headers, body)) ?? rep;
    } catch (e) {
      core.log.warn({ url: ctx.url, err: String(e) }, 'compression failed: stored as sent');
    }
  }
  try {
    return await commitRepresentation(core, ctx, t, head, rep, body, candidate);
  } finally {
    if (rep.writer !== writer) await rep.writer.release();
  }
}

async function commitRepresentation(
  core: ProxyCore,
  ctx: RequestCtx,
  t: Transfer,
  head: TransferHead,
  rep: Representation,
  body: { lifetime: number },
  candidate: { url: string; headers: StoredMeta['headers']; fetchStartedAt: number },
): Promise<StoredMeta | undefined> {
  const writer = rep.writer;
  const now = core.clock.now();
  const meta: StoredMeta = {
    key: variantKey(ctx.primary, head),
    primary: ctx.primary,
    url: ctx.url,
    status: head.status,
    headers: rep.headers,
    vary: head.vary,
    varyValues: head.varyValues,
    facts: head.facts,
    size: rep.size,
    sha256: rep.sha256,
    storedAt: now,
    freshUntil: freshUntil(now, body.lifetime, head.facts),
  };
  let committed: StoredMeta;
  try {
    committed = await writer.commit(meta);
  } catch (e) {
    storeFailed(core, ctx, e);
    return undefined;
  }
  // A purge applied while the commit was under way: its scan may have run before the entry was
  // visible, so look once more and take it back.
  if (!(await admitted(core, candidate))) {
    await core.store.delete(committed.key);
    refused(core, ctx);
    return undefined;
  }
  t.committed = committed;
  core.hot.delete(committed.key);
  if (committed.size <= core.limits.hotObjectMaxBytes) {
    try {
      makeHot(core, committed, await writer.read(0, committed.size));
    } catch {
      /* it is stored; it becomes hot on its first hit */
    }
  }
  announceComplete(core, ctx.keyBytes, committed);
  return committed;
}

/**
 * A 304 to a revalidation (RFC 9111 §4.3.4): the stored response `stale` takes the merged header
 * fields and the 304's age facts, fresh for `lifetime` seconds from `responseTime`; the hot copy
 * is dropped (it becomes hot again on its next hit) and the object announced `complete` again.
 */
export async function commitFreshened(
  core: ProxyCore,
  ctx: RequestCtx,
  stale: StoredMeta,
  fresh: {
    headers: StoredMeta['headers'];
    facts: StoredMeta['facts'];
    lifetime: number;
    responseTime: number;
  },
): Promise<StoredMeta> {
  const updated: StoredMeta = {
    ...stale,
    headers: fresh.headers,
    facts: fresh.facts,
    freshUntil: freshUntil(fresh.responseTime, fresh.lifetime, fresh.facts),
  };
  await core.store.update(updated);
  core.hot.delete(stale.key);
  announceComplete(core, ctx.keyBytes, updated);
  return updated;
}

/**
 * A full response to a revalidation means the stored one is no longer suitable (RFC 9111
 * §4.3.3): drop it (the caller has checked the new one is not stored under the same key).
 */
export async function dropReplaced(core: ProxyCore, stale: StoredMeta): Promise<void> {
  await core.store.delete(stale.key);
}
