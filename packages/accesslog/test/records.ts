/** Records for the tests: a plain hit, changed by `over`. */
import type { AccessRecord } from '../src/index.js';

export function record(over: Partial<AccessRecord> = {}): AccessRecord {
  return {
    time: Date.UTC(2026, 11, 4, 18, 5, 9, 250),
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
    ttfbMs: 0.4,
    totalMs: 0.9,
    requestId: 'r-1',
    aborted: false,
    userAgent: 'curl/8.5.0',
    ...over,
  };
}
