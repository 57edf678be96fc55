import { describe, expect, it } from 'vitest';
import { Arena, ARENA_CHUNK_BYTES, MAX_REGION_BYTES } from '../../src/store/arena.js';

describe('Arena', () => {
  it('copies regions in and hands out views that stay valid as chunks are added', () => {
    const arena = new Arena();
    expect(arena.capacity).toBe(0);
    const src = new Uint8Array(1000);
    const addrs: number[] = [];
    const views: Uint8Array[] = [];
    for (let i = 0; i < 600; i++) {
      src.fill(i & 255);
      const at = arena.append(src);
      addrs.push(at);
      views.push(arena.view(at, src.length));
    }
    src.fill(0); // the caller's buffer is not referenced
    // Chunks of 4, 8, ..., 128 KiB, then 256 KiB ones.
    expect(arena.capacity).toBe(4096 * (2 ** 6 - 1) + 2 * ARENA_CHUNK_BYTES);
    expect(arena.used).toBe(600_000);
    for (let i = 0; i < 600; i++) {
      const want = new Uint8Array(1000).fill(i & 255);
      expect(Buffer.compare(views[i]!, want)).toBe(0);
      expect(Buffer.compare(arena.view(addrs[i]!, 1000), want)).toBe(0);
      expect(arena.equals(addrs[i]!, want)).toBe(true);
      want[999]! ^= 1;
      expect(arena.equals(addrs[i]!, want)).toBe(false);
    }
  });

  it('starts small, never splits a region across chunks', () => {
    const arena = new Arena();
    expect(arena.append(new Uint8Array(10))).toBe(0);
    expect(arena.capacity).toBe(4096);
    arena.append(new Uint8Array(4096 - 20));
    const at = arena.append(new Uint8Array(20).fill(9));
    expect(at).toBe(ARENA_CHUNK_BYTES);
    expect(arena.capacity).toBe(4096 + 8192);
    expect([...arena.view(at, 20)]).toEqual(Array(20).fill(9));
    // A region larger than the next chunk's size gets a chunk of its own size.
    expect(arena.append(new Uint8Array(100_000))).toBe(2 * ARENA_CHUNK_BYTES);
    expect(arena.capacity).toBe(4096 + 8192 + 100_000);
    // A whole-chunk region fits; anything larger is refused.
    expect(arena.append(new Uint8Array(MAX_REGION_BYTES))).toBe(3 * ARENA_CHUNK_BYTES);
    expect(() => arena.append(new Uint8Array(MAX_REGION_BYTES + 1))).toThrow(RangeError);
  });
});
