// The heap trim as a Coral node runs it (CoralNode, `heapTrimIntervalMs` at its default), for the
// bench processes that stand in for a node's proxy (bench/memory-node.mjs, bench/http-server.mjs).

/**
 * Start it in this process; `onTrim(releasedBytes, tookMs)` after each trim. Resolves to false
 * where malloc_trim is unavailable (not glibc).
 */
export async function startHeapTrim(onTrim) {
  const { HeapTrimmer, loadMallocTrim, DEFAULT_HEAP_TRIM_INTERVAL_MS } =
    await import('@coral/node');
  const loaded = await loadMallocTrim();
  if (loaded.unavailable) return false;
  new HeapTrimmer({ intervalMs: DEFAULT_HEAP_TRIM_INTERVAL_MS, trim: loaded.trim, onTrim }).start();
  return true;
}
