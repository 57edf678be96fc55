#!/usr/bin/env node
// `npm run fleet -- --nodes 6`: a local Coral fleet, one process per node on 127.0.0.11, .12, ...
// (standard ports on each address), bootstrapping from the first, plus the sample origin on
// 127.0.0.1 reachable as www.origin.test. Prints how to use it; Ctrl-C stops everything.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Fleet, SampleOrigin } from '@coral/node/fleet';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '6' },
    subnet: { type: 'string', default: '0' },
    'origin-port': { type: 'string', default: '8080' },
    'data-root': { type: 'string' },
    zone: { type: 'string', default: 'nyud.net' },
    open: { type: 'boolean', default: false },
  },
});
const nodes = Number(values.nodes);
if (!Number.isInteger(nodes) || nodes < 1 || nodes > 200) {
  console.error('--nodes must be an integer from 1 to 200');
  process.exit(2);
}
const dataRoot = values['data-root'] ?? mkdtempSync(join(tmpdir(), 'coral-fleet-'));
const origin = new SampleOrigin({ host: '127.0.0.1', port: Number(values['origin-port']) });
const { port } = await origin.listen();
const fleet = new Fleet({
  nodes,
  dataRoot,
  subnet: Number(values.subnet),
  logLevel: 'info',
  open: values.open,
  env: {
    CORAL_ZONE: values.zone,
    CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
    CORAL_HOSTS: 'www.origin.test=127.0.0.1',
    CORAL_EXAMPLE_ORIGIN: `http://www.origin.test:${port}/obj/1`,
  },
});
process.stdout.write(`starting ${nodes} nodes (data and logs in ${dataRoot}) ...\n`);
try {
  await fleet.start();
} catch (err) {
  console.error(String(err));
  await fleet.stop();
  await origin.close();
  process.exit(1);
}
const name = `www.origin.test.${port}.${values.zone}`;
const rows = fleet.nodes.map(
  (n) =>
    `  node${n.index + 1}  ${n.ip.padEnd(13)} proxy :${n.proxyPort}  dns :${n.dnsPort}  dsht udp :${n.dshtPort}  admin ${n.adminUrl}`,
);
const first = fleet.nodes[0];
const second = fleet.nodes[1] ?? first;
process.stdout.write(
  [
    `fleet of ${nodes} nodes is up; sample origin http://127.0.0.1:${port}/ (as www.origin.test)`,
    ...rows,
    values.open
      ? 'open fleet (--open): nothing is authenticated'
      : `keyed fleet: one key generated for this run, in each node's CORAL_FLEET_KEYS (coral-node --admin URL keys list)`,
    '',
    'Try:',
    `  dig @${first.ip} -p ${first.dnsPort} ${name} A +short`,
    `  curl -s -o /dev/null -D - -H 'Host: ${name}' http://${first.ip}:${first.proxyPort}/obj/1`,
    `  curl -s -o /dev/null -D - -H 'Host: ${name}' http://${second.ip}:${second.proxyPort}/obj/1   # Cache-Status: peer`,
    `  node packages/node/dist/cli.js --admin ${first.adminUrl} status`,
    `  curl -s http://127.0.0.1:${port}/counts   # origin request counts`,
    'Ctrl-C stops the fleet.',
    '',
  ].join('\n'),
);
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    if (stopping) process.exit(1);
    stopping = true;
    process.stdout.write('stopping the fleet ...\n');
    await fleet.stop();
    await origin.close();
    process.exit(0);
  });
}
