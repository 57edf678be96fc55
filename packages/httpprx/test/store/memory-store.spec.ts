import { MemoryStore } from '../../src/store/memory-store.js';
import { storeContract } from './contract.js';

storeContract('MemoryStore', {
  async create(budgetBytes, onRemove) {
    const s = new MemoryStore(onRemove ? { onRemove } : {}, { budgetBytes });
    await s.open();
    return s;
  },
});
