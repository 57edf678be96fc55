/**
 * undici's `Agent` and its `request` API, loaded without the rest of undici. `import { Agent } from
 * 'undici'` evaluates undici's whole index — fetch, WebSocket, EventSource, the cache stores, the
 * mock and proxy agents — which a node never uses: about 7 MB of RSS and 3 MB of V8 heap at
 * start-up (Node 20, undici 7). The proxy needs the Agent and `request` alone: this module loads
 * those two files and what they require. undici's index also copies its API functions onto
 * `Dispatcher.prototype` (that is where `agent.request` comes from); this module does not patch a
 * shared prototype but calls the same function on the agent (`request(agent, options)`).
 * test/origin/undici-agent.spec.ts checks that these are the very objects undici exports (so an
 * undici release that moves a file fails there), that a request goes through, and that loading
 * the package leaves undici's index unevaluated.
 */
import { createRequire } from 'node:module';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';

const require = createRequire(import.meta.url);

export const Agent = require('undici/lib/dispatcher/agent.js') as typeof UndiciAgent;
export type Agent = UndiciAgent;

/** undici's `request(options)` as a function of the dispatcher it is called on (`this`). */
export const requestApi = require('undici/lib/api/api-request.js') as (
  this: Dispatcher,
  options: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

/** `agent.request(options)` as undici's index would have it. */
export function request(
  agent: Agent,
  options: Dispatcher.RequestOptions,
): Promise<Dispatcher.ResponseData> {
  return requestApi.call(agent, options);
}
