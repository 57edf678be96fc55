import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent as Exported, Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { Agent, request, requestApi } from '../../src/origin/undici-agent.js';

const packageDir = fileURLToPath(new URL('../..', import.meta.url));

describe('undici Agent and request loaded alone', () => {
  it('are the objects undici exports', () => {
    expect(Agent).toBe(Exported);
    // undici's index copies its API onto Dispatcher.prototype: the same function.
    expect(requestApi).toBe((Dispatcher.prototype as unknown as { request: unknown }).request);
  });

  it('a request through the agent', async () => {
    const server = createServer((req, res) => res.end(`${req.method} ${req.url}`));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const agent = new Agent({ connections: 1 });
    try {
      const { port } = server.address() as AddressInfo;
      const res = await request(agent, {
        origin: `http://127.0.0.1:${port}`,
        path: '/x?y=1',
        method: 'GET',
      });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe('GET /x?y=1');
    } finally {
      await agent.close();
      server.close();
    }
  });

  it("loading the package (dist) does not evaluate undici's index", async () => {
    const script = `
      import { createRequire } from 'node:module';
      await import('@coral/httpprx');
      const loaded = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify(loaded.filter((k) => k.includes('/undici/'))));`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', script],
      { cwd: packageDir },
    );
    const undici = JSON.parse(stdout) as string[];
    expect(undici.some((k) => k.endsWith('/undici/lib/dispatcher/agent.js'))).toBe(true);
    expect(undici.filter((k) => k.endsWith('/undici/index.js'))).toEqual([]);
  });
});
