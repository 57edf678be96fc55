#!/usr/bin/env node
/**
 * dsht-node — one DSHT node as a process, driven over stdin/stdout JSON lines (used by the
 * multi-process test and handy for poking at a fleet by hand).
 *
 *   CORAL_FLEET_KEYS=<key>[,<key>...] node packages/sim/dist/bin/dsht-node.js \
 *        --host 127.0.0.2 --port 0 --data ./data/n2 [--bootstrap 127.0.0.3:4000,...] \
 *        [--open] [--isolation-ms 30000]
 *
 * Keys come from the environment (never the command line, which other users can read): with
 * `CORAL_FLEET_KEYS` (comma-separated, 64 hex or base64 each, the first signs) the node runs in
 * keyed mode; without, in open mode (`--open` says so explicitly and refuses keys).
 * On start it prints `{"event":"ready","id":...,"ip":...,"port":...}`. Each input line is a request
 * `{"id":1,"op":"put","key":"name","value":"text","ttl":600}`; each answer is
 * `{"id":1,"ok":true,"result":...}` or `{"id":1,"ok":false,"error":{"code":...,"message":...}}`.
 * Ops: put, get, localGet (keys are names, hashed with keyFromName; values are UTF-8 text),
 * flush, routes, snapshot, ping {address, retries?}, members, authState, keys, keyInstall {key},
 * keyUse {keyId}, keyRemove {keyId}, stop. An 'isolated' change is printed as
 * `{"event":"isolated","isolated":true,"reason":...}`.
 */
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Keyring } from '@coral/keyring';
import { Dsht, DshtError, keyFromName, toHex } from '@coral/dsht';

const { values: args } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    data: { type: 'string' },
    bootstrap: { type: 'string', default: '' },
    open: { type: 'boolean', default: false },
    'isolation-ms': { type: 'string' },
  },
});

const out = (obj: unknown): void => {
  process.stdout.write(JSON.stringify(obj) + '\n');
};
const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8');

async function main(): Promise<void> {
  const keyText = process.env.CORAL_FLEET_KEYS ?? '';
  const keys = keyText
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  const keyring = keys.length > 0 ? Keyring.parse(keys) : undefined;
  const isolationAfterMs = args['isolation-ms'] ? Number(args['isolation-ms']) : undefined;
  const node = await Dsht.open(
    {
      bind: { host: args.host, port: Number(args.port) },
      dataDir: args.data,
      open: args.open ? true : undefined,
      auth: { isolationAfterMs },
    },
    { keyring },
  );
  node.on('isolated', (s) => out({ event: 'isolated', isolated: s.isolated, reason: s.reason }));
  const bootstrap = args.bootstrap ? args.bootstrap.split(',').filter(Boolean) : [];
  await node.start({ bootstrap });
  out({
    event: 'ready',
    id: toHex(node.id),
    ip: node.contact.ip,
    port: node.contact.port,
    routes: node.routes(0).length,
  });

  const requireKeyring = (): Keyring => {
    if (!keyring) throw new DshtError('DSHT_ERR_INVALID_ARGUMENT', 'open mode: no keyring');
    return keyring;
  };
  const handle = async (req: Record<string, unknown>): Promise<unknown> => {
    const key = typeof req.key === 'string' ? keyFromName(req.key) : undefined;
    switch (req.op) {
      case 'put': {
        const r = await node.put(
          key!,
          Buffer.from(scalar(req.value), 'utf8'),
          Number(req.ttl ?? 600),
        );
        return {
          stored: r.stored.map((s) => ({
            id: toHex(s.contact.id),
            ip: s.contact.ip,
            port: s.contact.port,
          })),
          stats: r.stats.messages,
        };
      }
      case 'get': {
        const r = await node.get(key!);
        const by = r.stats.answeredBy;
        return {
          values: r.values.map(text),
          hops: r.stats.hops,
          messages: r.stats.messages,
          answeredBy: by ? { id: toHex(by.id), ip: by.ip, port: by.port } : null,
        };
      }
      case 'localGet':
        return { values: node.localGet(key!).map(text) };
      case 'flush':
        await node.flush();
        return { flushed: true };
      case 'routes':
        return { contacts: node.routes(0).map((c) => `${c.ip}:${c.port}`) };
      case 'snapshot':
        return node.snapshot();
      case 'ping': {
        const [ip, port] = scalar(req.address).split(':');
        const retries = req.retries === undefined ? undefined : Number(req.retries);
        return { rttMs: await node.ping({ ip: ip!, port: Number(port) }, { retries }) };
      }
      case 'members':
        return { members: node.members() };
      case 'authState':
        return node.authState();
      case 'keys':
        return { keys: keyring?.list() ?? [] };
      case 'keyInstall':
        return { id: requireKeyring().install(String(req.key)) };
      case 'keyUse':
        requireKeyring().use(String(req.keyId));
        return { keys: keyring!.list() };
      case 'keyRemove':
        requireKeyring().remove(String(req.keyId));
        return { keys: keyring!.list() };
      case 'stop':
        await node.stop();
        setImmediate(() => process.exit(0));
        return { stopped: true };
      default:
        throw new DshtError('DSHT_ERR_INVALID_ARGUMENT', `unknown op ${String(req.op)}`);
    }
  };

  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    let req: Record<string, unknown>;
    try {
      req = JSON.parse(line) as Record<string, unknown>;
    } catch {
      out({ ok: false, error: { code: 'DSHT_ERR_INVALID_ARGUMENT', message: 'not JSON' } });
      return;
    }
    handle(req).then(
      (result) => out({ id: req.id, ok: true, result }),
      (err: unknown) =>
        out({
          id: req.id,
          ok: false,
          error: {
            code: (err as { code?: unknown }).code ?? 'ERROR',
            message: (err as Error).message,
          },
        }),
    );
  });
  rl.on('close', () => {
    void node.stop().then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`dsht-node: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});

/** A request field as text: a string or number as written, anything else (absent) as ''. */
function scalar(v: unknown): string {
  return typeof v === 'string' || typeof v === 'number' ? String(v) : '';
}
