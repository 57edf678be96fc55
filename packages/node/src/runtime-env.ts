/**
 * The process environment a long-running node starts with. Set outside the process, because glibc
 * reads these variables once, when the process starts: by the Docker image (`ENV` in the
 * Dockerfile), by `npm start` and by the fleet launcher (`@coral/node/fleet`); a node started any
 * other way (`coral-node start` from a shell, a systemd unit) should set them too. A test checks
 * that the Dockerfile and `npm start` carry every entry.
 *
 * glibc malloc's mmap threshold, fixed at 128 KiB (its default starting value): by default glibc
 * raises the threshold each time a large mmap'd block is freed (up to 32 MiB), after which blocks
 * of that size come from the heap and its per-thread arenas, where freed space in the middle is
 * never given back. A node that grows its typed-array directories and LevelDB's buffers while it
 * fills ends up holding tens of MB of such holes (bench:memory, issue 12: a node holding 100,000
 * objects and 100,000 DSHT values, 207 → 184 MB RSS at rest). Setting the threshold turns the
 * dynamic adjustment off; the trim threshold (free space kept at the heap's top) is set to the
 * same value so it stays where it was.
 *
 * At most two malloc arenas (glibc's default is eight per core): the libuv threads that run
 * LevelDB's reads and writes and the file system calls each grow an arena of their own, whose
 * free space stays with it. With two, a node restarted on 100,000 objects and values holds about
 * 26 MB less at rest (bench:memory, `rss100kRestartedMB` 258 → 232 MB, provisional); the node's
 * threads are few and mostly idle, so they hardly contend for the shared arenas.
 *
 * Other C libraries (musl, macOS) ignore these variables.
 */
export const NODE_RUNTIME_ENV: Readonly<Record<string, string>> = Object.freeze({
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
  MALLOC_ARENA_MAX: '2',
});
