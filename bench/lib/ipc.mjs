// Calls in both directions over a Node IPC channel (a forked child's `process`, or the parent's
// handle on the child): `peer.call(method, ...args)` resolves to what the other side's handler of
// that name returned, or rejects with its error message. Messages that are not calls or replies
// are left to other listeners.

/**
 * @param {{ send(m: unknown): unknown, on(e: 'message', f: (m: any) => void): unknown }} endpoint
 * @param {Record<string, (...args: any[]) => unknown>} handlers
 */
export function ipcPeer(endpoint, handlers = {}) {
  let nextId = 1;
  const pending = new Map();
  endpoint.on('message', async (m) => {
    if (m?.ipc === 'reply') {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(m.error));
      else p.resolve(m.result);
      return;
    }
    if (m?.ipc !== 'call') return;
    const fn = handlers[m.method];
    try {
      if (!fn) throw new Error(`no handler for ${m.method}`);
      const result = await fn(...m.args);
      endpoint.send({ ipc: 'reply', id: m.id, result });
    } catch (e) {
      endpoint.send({ ipc: 'reply', id: m.id, error: e instanceof Error ? e.message : String(e) });
    }
  });
  return {
    call(method, ...args) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        endpoint.send({ ipc: 'call', id, method, args });
      });
    },
    /** Reject every call still waiting (the other side is gone). */
    fail(err) {
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    },
  };
}
