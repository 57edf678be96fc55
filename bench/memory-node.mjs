// One Coral node's proxy (and for the metadata phase its DSHT node) for bench/memory.mjs, in a
// process of its own so that the RSS the bench reads is the node's alone (the origin and the
// clients live in the bench's process). Run with --expose-gc. Driven by calls over IPC:
//   start({ kind: 'metadata', dir, originPort, hotBudgetBytes, dshtPort })
//       a DSHT node (UDP on 127.0.0.1, LevelDB in dir/dsht, no peers: every value it is given is
//       stored here, as on the node a key's values land on) and a proxy in site mode for
//       `site.test` → the origin, disk store in dir/http, announcing through @coral/node's
//       DshtContentIndex into that DSHT node. The same call on the same dir after a stop() is a
//       restart: both reload what they persisted (give it the dshtPort the first start answered,
//       so that the DSHT node keeps its id).
//   start({ kind: 'proxy', dir, nodeId, maxObjectBytes })
//       a proxy for Coralized names (origin.test.<port>.nyud.net → the bench's origin), disk store
//       in dir, whose ContentIndex is the bench's shared index (over IPC): several such processes
//       make a fleet whose peers find each other's announcements.
//   fleet(members)   the fleet's proxies, for the peer-fetch adapter below
//   measure(label)   full GC, then process.memoryUsage() and /proc/self/status's RSS parts; with
//                    CORAL_BENCH_HEAP_SNAPSHOTS=<dir> in the environment (memory.mjs
//                    --heap-snapshots <dir>) also a heap snapshot <dir>/<label>-<pid>.heapsnapshot
//   usage()          the same without the GC (memory as it is at that moment)
//                    and the heap trims run so far (lib/heap-trim.mjs)
//   counts()         cached objects (the proxy's cache listing) and DSHT values held
//   stop()           close the proxy (and the DSHT node), then exit
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { startHeapTrim } from './lib/heap-trim.mjs';
import { ipcPeer } from './lib/ipc.mjs';
import { processMemory, smapsSummary } from './lib/system.mjs';

process.once('disconnect', () => process.exit(0));
if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');

let proxy;
let dsht;
/** The heap trims run so far: RSS released (bytes) and time taken (ms). */
const heapTrims = [];
/** nodeId → { nodeId, ip, httpPort } of every proxy in the bench's fleet. */
const fleet = new Map();

const parent = ipcPeer(process, {
  async start(config) {
    const httpprx = await import('@coral/httpprx');
    if (config.kind === 'metadata') return startMetadataNode(httpprx, config);
    if (config.kind === 'proxy') return startFleetProxy(httpprx, config);
    throw new Error(`unknown kind ${config.kind}`);
  },
  fleet(members) {
    fleet.clear();
    for (const m of members) fleet.set(m.nodeId, m);
  },
  async measure(label = 'measure') {
    for (let i = 0; i < 3; i++) {
      globalThis.gc();
      await tick();
    }
    const usage = {
      ...process.memoryUsage(),
      ...processMemory(process.pid),
      spaces: spaces(),
      heapTrims: heapTrims.slice(),
    };
    const snapshots = process.env.CORAL_BENCH_HEAP_SNAPSHOTS;
    if (snapshots) writeHeapSnapshot(join(snapshots, `${label}-${process.pid}.heapsnapshot`));
    if (process.env.CORAL_BENCH_SMAPS) {
      const top = smapsSummary(process.pid).filter(([, bytes]) => bytes >= 5e5);
      usage.smaps = top.map(([name, bytes]) => `${name} ${(bytes / 1e6).toFixed(1)}`);
    }
    return usage;
  },
  usage() {
    return {
      ...process.memoryUsage(),
      ...processMemory(process.pid),
      heapTrims: heapTrims.slice(),
    };
  },
  async counts() {
    return { cached: (await proxy.cacheList()).length, dshtValues: dsht?.store.size };
  },
  async stop() {
    await proxy?.close();
    await dsht?.stop();
    setTimeout(() => process.exit(0), 10);
  },
});

/** V8's heap by space: { name: [committed MB, used MB] } for the spaces holding ≥ 1 MB. */
function spaces() {
  const out = {};
  for (const s of getHeapSpaceStatistics()) {
    if (s.physical_space_size < 1e6) continue;
    out[s.space_name.replace(/_space$/, '')] = [s.physical_space_size, s.space_used_size].map(
      (n) => Math.round(n / 1e5) / 10,
    );
  }
  return out;
}

async function startMetadataNode({ CoralProxy }, { dir, originPort, hotBudgetBytes, dshtPort }) {
  const { Dsht, toHex } = await import('@coral/dsht');
  const { DshtContentIndex } = await import('@coral/node');
  dsht = await Dsht.open({
    bind: { host: '127.0.0.1', port: dshtPort },
    dataDir: join(dir, 'dsht'),
  });
  await dsht.start();
  const self = { nodeId: toHex(dsht.id), ip: '127.0.0.1', httpPort: 0 };
  proxy = new CoralProxy(
    { index: new DshtContentIndex({ dsht }, { self }) },
    {
      sites: { 'site.test': `http://127.0.0.1:${originPort}` },
      allowPrivateOrigins: true,
      dataDir: join(dir, 'http'),
      memoryBudgetBytes: hotBudgetBytes,
      rateLimit: { perSecond: 0 }, // the fill comes from one address
      self,
    },
  );
  await startHeapTrim((released, tookMs) => heapTrims.push({ released, tookMs }));
  const { port } = await proxy.listen(0, '127.0.0.1');
  return { port, nodeId: self.nodeId, dshtPort: dsht.contact.port };
}

async function startFleetProxy({ CoralProxy }, { dir, nodeId, maxObjectBytes }) {
  const index = {
    lookup: (key) => parent.call('index', 'lookup', nodeId, Buffer.from(key).toString('hex')),
    announce: (key, holder, ttl) =>
      parent.call('index', 'announce', nodeId, Buffer.from(key).toString('hex'), holder, ttl),
    withdraw: (key) => parent.call('index', 'withdraw', nodeId, Buffer.from(key).toString('hex')),
  };
  const self = { nodeId, ip: '127.0.0.1', httpPort: 0 };
  const peer = peerWiring(self);
  proxy = new CoralProxy(
    { index, ...peer.components },
    {
      allowPrivateOrigins: true,
      hosts: { 'origin.test': ['127.0.0.1'] },
      dataDir: dir,
      maxObjectBytes,
      self,
      ...peer.options,
    },
  );
  const heapTrim = await startHeapTrim((released, tookMs) => heapTrims.push({ released, tookMs }));
  const { port } = await proxy.listen(0, '127.0.0.1');
  return { port, nodeId, heapTrim };
}

// =============================================================================================
// ADAPTER — how a proxy is wired to fetch from its peers. Issues 10 and 12 are changing this API
// (the httpprx owner is restructuring the package); update this one function when it changes.
//
// Current API (main after 333e4ac, "peer fetch only to verified members"): a peer fetch goes only
// to `members.member(holder.nodeId)`'s address (ProxyComponents.members; without it, no peer fetch
// at all), and with ProxyComponents.peerAuth set, an unsigned or badly signed peer request gets
// 403. The bench gives every proxy the fleet's members (the bench's list of its proxies) and no
// peerAuth (open mode, as a node without keys runs). For keyed mode, pass the same PeerAuth (an
// HttpPeerSigner from @coral/keyring over one shared key, once that package exists) to every
// proxy here. Before 333e4ac the proxy used the holder's own ip:httpPort and ignored `members`.
// If phase (c) reports that the origin was asked twice or that no answer came from a peer, this
// is the place to look.
// =============================================================================================
function peerWiring(self) {
  /** FleetMembers over the bench's fleet list (kept up to date by the bench's fleet() call). */
  const members = {
    member(id) {
      const m = fleet.get(id);
      return m && m.nodeId !== self.nodeId ? { ip: m.ip, httpPort: m.httpPort } : undefined;
    },
    recordsAuthenticated: false,
  };
  return { components: { members }, options: {} };
}
