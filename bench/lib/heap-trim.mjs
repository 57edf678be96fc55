// The heap trim as a Coral node runs it (CoralNode, `heapTrimIntervalMs` at its default), for the
// bench processes that stand in for a node's proxy (bench/memory-node.mjs, bench/http-server.mjs).

const quiet = { info() {}, debug() {} };

/**
 * Start it in this process; `onTrim(releasedBytes, tookMs)` after each trim. Resolves to false
 * where malloc_trim is unavailable (not glibc).
 */
export async function startHeapTrim(onTrim) {
  const node = await import('@coral/node');
  const trimmer = await node.startHeapTrim({
    intervalMs: node.DEFAULT_HEAP_TRIM_INTERVAL_MS,
    logger: quiet,
    onTrim,
  });
  return trimmer !== undefined;
}
