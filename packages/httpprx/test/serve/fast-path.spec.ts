import { describe, expect, it } from 'vitest';
import { PEER_HEADER } from '../../src/constants.js';
import { fastPathHost } from '../../src/serve/fast-path.js';

describe('fastPathHost (the fast path reads raw field lines, never builds req.headers)', () => {
  it('gives the one Host value, whatever the case of the field name (RFC 9110 §5.1)', () => {
    expect(fastPathHost(['Host', 'a.nyud.net', 'User-Agent', 'wrk'])).toBe('a.nyud.net');
    expect(fastPathHost(['accept', '*/*', 'HOST', 'b.nyud.net:8090'])).toBe('b.nyud.net:8090');
    // Fields of the same lengths as the names it looks for are passed over.
    expect(fastPathHost(['Date', 'x', 'host', 'c.nyud.net', 'Accept-Ranges', 'bytes'])).toBe(
      'c.nyud.net',
    );
  });

  it('no Host, or Host twice (RFC 9112 §3.2: a 400 on the full path): not for the fast path', () => {
    expect(fastPathHost([])).toBeUndefined();
    expect(fastPathHost(['Accept', '*/*'])).toBeUndefined();
    expect(fastPathHost(['Host', 'a.nyud.net', 'host', 'a.nyud.net'])).toBeUndefined();
    expect(fastPathHost(['Host', 'a.nyud.net', 'HoSt', 'evil.example'])).toBeUndefined();
  });

  it('any field that could change the answer sends the request down the full path', () => {
    const fields = [
      'Via',
      'Range',
      'If-None-Match',
      'If-Modified-Since',
      'Cache-Control',
      'Pragma',
      'Authorization',
      PEER_HEADER,
    ];
    for (const f of fields) {
      for (const name of [f, f.toUpperCase(), f.toLowerCase()]) {
        expect(fastPathHost(['Host', 'a.nyud.net', name, ''])).toBeUndefined();
        expect(fastPathHost([name, 'x', 'Host', 'a.nyud.net'])).toBeUndefined();
      }
    }
  });
});
