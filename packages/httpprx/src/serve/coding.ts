/**
 * Sending a stored gzip representation (../kit/encoding.ts) in the coding a client was chosen:
 * the stored bytes as they are (gzip), decoded (identity, whole or one range of the identity
 * form), or decoded and re-encoded (br, zstd) — node:zlib streams, so a large body is never held
 * whole and backpressure reaches the store's reader.
 */
import type { Readable } from 'node:stream';
import { Transform, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import type { HeaderRecord } from '../cache/policy.js';
import { CODED_FIELD, varyWithEncoding, weakEtag } from '../kit/encoding.js';
import type { Coded, Coding } from '../kit/encoding.js';

/** Brotli quality and zstd level of a re-encoded hit: fast levels, the hit is per request. */
export const REENCODE_BROTLI_QUALITY = 4;
export const REENCODE_ZSTD_LEVEL = 3;

/** The gzip level a body is compressed with at commit (zlib's default, 6). */
export const COMMIT_GZIP_LEVEL = 6;

/** Compress a body once, at commit (in the libuv pool, off the event loop). */
export function gzipOnce(body: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zlib.gzip(body, { level: COMMIT_GZIP_LEVEL }, (err, out) => (err ? reject(err) : resolve(out)));
  });
}

/** Decode a stored gzip body whole (checking a member's copy, tests). */
export function gunzipWhole(body: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zlib.gunzip(body, (err, out) => (err ? reject(err) : resolve(out)));
  });
}

/**
 * The header fields for `coding` of a coded response: Content-Encoding, a weak ETag for coded
 * forms (identity keeps the origin's), Vary with Accept-Encoding, and the marker dropped.
 * Content-Length is the caller's (it depends on the range).
 */
export function codedHeaders(headers: HeaderRecord, coding: Coding): HeaderRecord {
  const out: HeaderRecord = { ...headers };
  delete out[CODED_FIELD];
  out['vary'] = varyWithEncoding(out['vary']);
  if (coding === 'identity') {
    delete out['content-encoding'];
    return out;
  }
  out['content-encoding'] = coding;
  const etag = weakEtag(out['etag']);
  if (etag !== undefined) out['etag'] = etag;
  return out;
}

/** Bytes `start..end` (inclusive) of what flows through. */
function slice(start: number, end: number): Transform {
  let at = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const from = Math.max(0, start - at);
      const to = Math.min(chunk.length, end + 1 - at);
      at += chunk.length;
      done(null, from < to ? chunk.subarray(from, to) : undefined);
    },
  });
}

/**
 * The body of `coded` (stored gzip bytes from `source`) in `coding`; for identity, optionally only
 * bytes `range.start..range.end` of the identity form. Errors (a corrupt body) end the stream
 * with an error.
 */
export function codedBody(
  source: Readable,
  coded: Coded,
  coding: Coding,
  range?: { start: number; end: number },
): Readable {
  if (coding === 'gzip') return source;
  const stages: NodeJS.ReadWriteStream[] = [zlib.createGunzip()];
  if (coding === 'br') {
    stages.push(
      zlib.createBrotliCompress({
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: REENCODE_BROTLI_QUALITY,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: coded.length,
        },
      }),
    );
  } else if (coding === 'zstd') {
    stages.push(
      zlib.createZstdCompress({
        params: { [zlib.constants.ZSTD_c_compressionLevel]: REENCODE_ZSTD_LEVEL },
      }),
    );
  } else if (range) {
    stages.push(slice(range.start, range.end));
  }
  const last = stages[stages.length - 1] as unknown as Readable;
  pipeline([source, ...stages] as unknown as [Readable, ...NodeJS.ReadWriteStream[]], () => {
    /* an error destroys `last`, which the response pipe reports */
  });
  return last;
}
