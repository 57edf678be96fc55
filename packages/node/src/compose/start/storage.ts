/**
 * Start step "data directory": the node's data directory, created if missing, and what opening
 * each of its LevelDB databases needs (storage/open-store.ts: a lock held elsewhere, a corrupt
 * database moved aside).
 */
import { mkdir } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { OpenStoreContext } from '../../storage/open-store.js';
import type { NodeState } from '../state.js';
import { step } from './step.js';

/** `openStore`'s context less the store's name and directory. */
export type NodeStorage = Omit<OpenStoreContext, 'store' | 'dir'>;

export async function dataDirectory(s: NodeState): Promise<NodeStorage> {
  const dataDir = resolvePath(s.config.dataDir);
  await step('data directory', () => mkdir(dataDir, { recursive: true }));
  return { dataDir, logger: s.log('storage'), metrics: s.metrics.storage, clock: s.clock };
}
