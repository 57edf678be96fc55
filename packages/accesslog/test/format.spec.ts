import { describe, expect, it } from 'vitest';
import {
  clfTime,
  escapeDefault,
  formatCombined,
  formatJson,
  isoTime,
  parseJsonLine,
} from '../src/index.js';
import { record } from './records.js';

// The combined log format as log tools parse it (GoAccess's COMBINED, Logstash's
// HTTPD_COMBINEDLOG), with the quoted cache result this log appends.
const COMBINED =
  /^(\S+) (\S+) (\S+) \[([^\]]+)\] "([^"]*)" (\d{3}) (\d+|-) "([^"]*)" "([^"]*)" "([^"]*)"$/;

/** Undo nginx's escape=default: `\xHH` back to the byte (as a latin1 character). */
function unescape(s: string): string {
  return s.replace(/\\x([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

describe('json format', () => {
  it('is one line marked "log":"access" first, with every field given', () => {
    const line = formatJson(record({ upstreamMs: 12, tls: 'TLSv1.3', referer: 'http://r/' }));
    expect(line.endsWith('\n')).toBe(true);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(line.startsWith('{"log":"access",')).toBe(true);
    expect(JSON.parse(line)).toEqual({
      log: 'access',
      time: '2026-12-04T18:05:09.250Z',
      client: '203.0.113.7',
      clientPort: 51234,
      method: 'GET',
      host: 'www.example.com.nyud.net',
      url: 'http://www.example.com.nyud.net:8090/a.jpg?x=1',
      originUrl: 'http://www.example.com/a.jpg?x=1',
      protocol: 'HTTP/1.1',
      status: 200,
      bytes: 1024,
      cache: { result: 'hit', hit: true, stored: false, collapsed: false, ttl: 300 },
      served: { from: 'memory' },
      upstreamMs: 12,
      ttfbMs: 0.4,
      totalMs: 0.9,
      tls: 'TLSv1.3',
      requestId: 'r-1',
      aborted: false,
      referer: 'http://r/',
      userAgent: 'curl/8.5.0',
    });
  });

  it('leaves absent facts out and keeps hostile bytes inside one line', () => {
    const line = formatJson(
      record({
        originUrl: undefined,
        userAgent: 'a"\n\r\u0000b',
        referer: 'lone \ud800 \\ é',
        ttfbMs: undefined,
      }),
    );
    expect(line.split('\n')).toHaveLength(2);
    const o = JSON.parse(line) as Record<string, unknown>;
    expect(o).not.toHaveProperty('originUrl');
    expect(o).not.toHaveProperty('ttfbMs');
    expect(o['userAgent']).toBe('a"\n\r\u0000b');
    expect(o['referer']).toBe('lone \ud800 \\ é');
  });
});

describe('isoTime', () => {
  it('is toISOString, for every millisecond of a second and across seconds', () => {
    const base = Date.UTC(2026, 11, 31, 23, 59, 59);
    for (const ms of [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 86_400_000]) {
      expect(isoTime(base + ms)).toBe(new Date(base + ms).toISOString());
    }
    expect(isoTime(0)).toBe('1970-01-01T00:00:00.000Z');
  });
});

describe('parseJsonLine', () => {
  it('reads a json line back into its record, and refuses other lines', () => {
    const r = record({ upstreamMs: 3, tls: 'TLSv1.3' });
    expect(parseJsonLine(formatJson(r))).toEqual(r);
    expect(formatCombined(parseJsonLine(formatJson(r))!)).toBe(formatCombined(r));
    for (const other of [
      '{"level":30,"time":1,"msg":"started"}',
      'not json',
      '[]',
      '{"log":"access","time":"never","status":200,"url":"/","cache":{}}',
      '{"log":"access","time":"2026-12-04T18:05:09.250Z"}',
    ]) {
      expect(parseJsonLine(other), other).toBeUndefined();
    }
  });
});

describe('combined format', () => {
  it('writes the combined fields and appends the cache result', () => {
    const line = formatCombined(record({ referer: 'http://ref.example/' }));
    expect(line).toBe(
      '203.0.113.7 - - [04/Dec/2026:18:05:09 +0000] "GET /a.jpg?x=1 HTTP/1.1" 200 1024 ' +
        '"http://ref.example/" "curl/8.5.0" "HIT"\n',
    );
    const m = COMBINED.exec(line.slice(0, -1));
    expect(m?.slice(1)).toEqual([
      '203.0.113.7',
      '-',
      '-',
      '04/Dec/2026:18:05:09 +0000',
      'GET /a.jpg?x=1 HTTP/1.1',
      '200',
      '1024',
      'http://ref.example/',
      'curl/8.5.0',
      'HIT',
    ]);
  });

  it('parses back with hostile bytes in the request target, referer and user agent', () => {
    // As node:http hands them over: latin1, one character per byte.
    const all = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join('');
    const hostile = [
      '"quoted" \\back\\ "',
      'line\nbreak\r\nHTTP/1.1" 200 0 "-" "forged" "HIT"\n1.2.3.4 - - [x] "GET / HTTP/1.1"',
      'ctl\u0000\u0001\u001b[31m\u007f',
      all,
      '] [ ',
    ];
    for (const h of hostile) {
      const target = `/p?${h}`;
      const line = formatCombined(
        record({
          url: `http://www.example.com.nyud.net:8090${target}`,
          referer: h,
          userAgent: h,
          status: 404,
          bytes: 0,
          cache: { result: 'miss', hit: false, stored: false, collapsed: false },
        }),
      );
      expect(line.indexOf('\n'), JSON.stringify(h)).toBe(line.length - 1);
      // Only printable ASCII on the line: a terminal or a log shipper sees no control bytes.
      expect(/^[\x20-\x7e]*$/.test(line.slice(0, -1)), JSON.stringify(h)).toBe(true);
      const m = COMBINED.exec(line.slice(0, -1));
      expect(m, JSON.stringify(h)).not.toBeNull();
      expect(unescape(m![5]!)).toBe(`GET ${target} HTTP/1.1`);
      expect(unescape(m![8]!)).toBe(h);
      expect(unescape(m![9]!)).toBe(h);
      expect(m![6]).toBe('404');
      expect(m![10]).toBe('MISS');
    }
  });

  it('escapes as nginx escape=default does, and writes - for an empty value', () => {
    expect(escapeDefault('a"b\\c\td\u0080\u00ff')).toBe('a\\x22b\\x5Cc\\x09d\\x80\\xFF');
    expect(escapeDefault('plain text ~')).toBe('plain text ~');
    expect(escapeDefault('')).toBe('-');
    expect(escapeDefault(undefined)).toBe('-');
    // Beyond latin1 (only from code that built the record itself): its UTF-8 bytes.
    expect(escapeDefault('é€😀')).toBe('\\xE9\\xE2\\x82\\xAC\\xF0\\x9F\\x98\\x80');
  });

  it('formats times in UTC with two-digit fields', () => {
    expect(clfTime(Date.UTC(2027, 0, 2, 3, 4, 5))).toBe('[02/Jan/2027:03:04:05 +0000]');
    expect(clfTime(Date.UTC(2027, 0, 2, 3, 4, 5, 999))).toBe('[02/Jan/2027:03:04:05 +0000]');
    expect(clfTime(Date.UTC(2027, 0, 2, 3, 4, 6))).toBe('[02/Jan/2027:03:04:06 +0000]');
  });
});
