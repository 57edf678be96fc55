import { describe, expect, it } from 'vitest';
import {
  ACCESSLOG_ERR_FILTER,
  ACCESSLOG_ERR_SUBSCRIBERS,
  LiveHub,
  formatJson,
  matches,
  parseFilter,
} from '../src/index.js';
import type { AccessRecord } from '../src/index.js';
import { record } from './records.js';

const ids = (lines: string[] | undefined) =>
  (lines ?? []).map((l) => (JSON.parse(l) as { requestId: string }).requestId);

describe('live stream filters', () => {
  const miss = record({
    requestId: 'miss',
    status: 404,
    cache: { result: 'miss', hit: false, stored: false, collapsed: false },
  });
  const v6 = record({ requestId: 'v6', client: '2001:db8::7', status: 502 });
  const other = record({
    requestId: 'other',
    host: 'img.other.org.nyud.net',
    url: 'http://img.other.org.nyud.net/x',
    originUrl: 'https://img.other.org:8443/x',
  });

  it('parses query parameters and checks each part', () => {
    const f = parseFilter({ host: 'WWW.example.com', status: '4xx,5xx' });
    expect(matches(f, miss)).toBe(true);
    expect(matches(f, record())).toBe(false); // a 200
    expect(matches(f, other)).toBe(false);
    expect(matches(parseFilter({ cache: 'hit' }), miss)).toBe(false);
    expect(matches(parseFilter({ cache: 'miss,stale' }), miss)).toBe(true);
    expect(matches(parseFilter({ client: '203.0.113.0/24' }), miss)).toBe(true);
    expect(matches(parseFilter({ client: '198.51.100.0/24' }), miss)).toBe(false);
    expect(matches(parseFilter({ client: '2001:db8::/32' }), v6)).toBe(true);
    expect(matches(parseFilter({ client: '2001:db8::/32' }), miss)).toBe(false);
    // By the origin's host (port and scheme aside), or a domain with its subdomains.
    expect(matches(parseFilter({ host: 'img.other.org' }), other)).toBe(true);
    expect(matches(parseFilter({ host: '.other.org' }), other)).toBe(true);
    expect(matches(parseFilter({ host: '.other.org' }), miss)).toBe(false);
    expect(matches(parseFilter({ host: 'img.other.org.nyud.net' }), other)).toBe(true);
    expect(matches(parseFilter({}), v6)).toBe(true);
  });

  it('refuses a bad filter with ACCESSLOG_ERR_FILTER naming the value', () => {
    for (const q of [
      { status: '6xx' },
      { status: '200' },
      { cache: 'warm' },
      { client: '10.0.0.0/33' },
      { client: 'nope' },
      { host: 'bad host' },
      { host: 'a/b' },
    ]) {
      expect(() => parseFilter(q), JSON.stringify(q)).toThrow(
        expect.objectContaining({ code: ACCESSLOG_ERR_FILTER }),
      );
    }
    expect(() => parseFilter({ cache: 'warm' })).toThrow(/"warm"/);
  });
});

describe('LiveHub', () => {
  const publish = (hub: LiveHub, r: AccessRecord) => hub.publish(r, () => formatJson(r));

  it('gives each subscriber the lines its filter passes, in order', async () => {
    const hub = new LiveHub();
    const all = hub.subscribe({});
    const errors = hub.subscribe(parseFilter({ status: '5xx' }));
    publish(hub, record({ requestId: 'a' }));
    publish(hub, record({ requestId: 'b', status: 500 }));
    publish(hub, record({ requestId: 'c' }));
    expect(ids(await all.next())).toEqual(['a', 'b', 'c']);
    expect(ids(await errors.next())).toEqual(['b']);
    // A reader waiting is woken by the next line.
    const waiting = errors.next();
    publish(hub, record({ requestId: 'd', status: 503 }));
    expect(ids(await waiting)).toEqual(['d']);
    expect(hub.stats).toMatchObject({ subscribers: 2, delivered: 6, droppedSlow: 0 });
  });

  it('formats a line only when some subscriber wants it', () => {
    const hub = new LiveHub();
    let made = 0;
    const line = () => {
      made++;
      return '{}\n';
    };
    hub.publish(record(), line);
    hub.subscribe(parseFilter({ status: '5xx' }));
    hub.publish(record(), line);
    expect(made).toBe(0);
    hub.subscribe({});
    hub.subscribe({});
    hub.publish(record(), line);
    expect(made).toBe(1);
  });

  it('drops a subscriber that stops reading once its queue is full, and counts it', async () => {
    const hub = new LiveHub({}, { queueBytes: 4096 });
    const slow = hub.subscribe({});
    const fast = hub.subscribe({});
    let slowEnded = 0;
    hub.onSlow = () => slowEnded++;
    let n = 0;
    while (!slow.ended && n < 1000) {
      publish(hub, record({ requestId: `r-${n++}` }));
      expect(slow.queuedBytes).toBeLessThanOrEqual(4096);
      await fast.next(); // the fast reader keeps up
    }
    expect(slow.ended).toBe('slow');
    expect(n).toBeLessThan(1000);
    expect(await slow.next()).toBeUndefined();
    expect(fast.ended).toBeUndefined();
    expect(hub.stats).toMatchObject({ subscribers: 1, droppedSlow: 1 });
    expect(slowEnded).toBe(1);
    // Later lines still reach the reader that keeps up.
    publish(hub, record({ requestId: 'later' }));
    expect(ids(await fast.next())).toEqual(['later']);
  });

  it('refuses a subscriber past maxSubscribers, and takes one again after a close', () => {
    const hub = new LiveHub({}, { maxSubscribers: 2 });
    const a = hub.subscribe({});
    hub.subscribe({});
    expect(() => hub.subscribe({})).toThrow(
      expect.objectContaining({ code: ACCESSLOG_ERR_SUBSCRIBERS }),
    );
    expect(hub.stats.refused).toBe(1);
    a.close();
    expect(a.ended).toBe('closed');
    expect(() => hub.subscribe({})).not.toThrow();
  });

  it('ends every subscription when it closes, waking a waiting reader', async () => {
    const hub = new LiveHub();
    const s = hub.subscribe({});
    const waiting = s.next();
    hub.close();
    expect(await waiting).toBeUndefined();
    expect(s.ended).toBe('hub-closed');
    expect(hub.active).toBe(false);
    expect(() => hub.subscribe({})).toThrow(
      expect.objectContaining({ code: ACCESSLOG_ERR_SUBSCRIBERS }),
    );
  });
});
