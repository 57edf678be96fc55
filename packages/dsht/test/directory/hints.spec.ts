import { describe, expect, it } from 'vitest';
import { decodeNodeRecord, encodeNodeRecord, networkHintKeys } from '../../src/directory/hints.js';
import { keyFromName, nodeIdFor } from '../../src/id/id.js';

describe('locality hints', () => {
  it('names /24 and /16 keys and round-trips checked records', () => {
    expect(networkHintKeys('203.0.113.9').map((h) => h.name)).toEqual([
      'net:203.0.113.0/24',
      'net:203.0.0.0/16',
    ]);
    expect(networkHintKeys('203.0.113.9')[0]!.key).toEqual(keyFromName('net:203.0.113.0/24'));
    expect(networkHintKeys('::1')).toEqual([]);
    const c = {
      id: nodeIdFor('10.0.0.1', 4000),
      ip: '10.0.0.1',
      port: 4000,
      httpPort: 8090,
      region: 'eu',
    };
    expect(decodeNodeRecord(encodeNodeRecord(c))).toEqual(c);
    // A record whose id is not SHA-1 of its address is rejected, as is garbage.
    expect(decodeNodeRecord(encodeNodeRecord({ ...c, port: 4001 }))).toBeUndefined();
    expect(decodeNodeRecord(new Uint8Array([0xc1]))).toBeUndefined();
    expect(decodeNodeRecord(new Uint8Array([1, 2, 3]))).toBeUndefined();
  });
});
