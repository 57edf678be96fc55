import { MemoryStore } from '../../src/store/memory-store.js';
import { storeContract } from './contract.js';

storeContract('MemoryStore', {
  async create(budgetBytes, onEvict) {
    const s = new MemoryStore({ onEvict }, { budgetBytes });
    await s.open();
    return s;
  },
});
