// UDP load generator for bench/dns.mjs when dnsperf is not installed: a child process (its own
// event loop) that says 'ready', is pinned to a CPU by the bench like dnsperf, and then gets its
// settings in one IPC message. Sends pre-encoded A queries (with an EDNS OPT, random 0x20 case) to the server and
// measures each round trip by transaction id. Modes: 'max' keeps `window` queries in flight per
// socket; 'rate' sends at a fixed rate from a 1 ms ticker. Bounded by `durationMs`.
import dgram from 'node:dgram';

process.send('ready'); // the bench pins this process's threads, then sends the settings
const {
  port,
  host,
  mode,
  durationMs,
  rate,
  window,
  sockets: nSockets,
  names,
  seed,
} = await new Promise((resolve) => process.once('message', resolve));

let s = seed >>> 0 || 1;
const rnd = () => {
  s ^= s << 13;
  s >>>= 0;
  s ^= s >>> 17;
  s ^= s << 5;
  s >>>= 0;
  return s / 4294967296;
};

function encodeQuery(name) {
  const labels = name.split('.');
  const qlen = labels.reduce((n, l) => n + 1 + l.length, 1) + 4;
  const buf = Buffer.alloc(12 + qlen + 11);
  buf.writeUInt16BE(0x0000, 2); // RD=0: a resolver asking an authority
  buf.writeUInt16BE(1, 4);
  buf.writeUInt16BE(1, 10);
  let p = 12;
  for (const l of labels) {
    buf[p++] = l.length;
    for (let i = 0; i < l.length; i++) {
      const c = l.charCodeAt(i);
      buf[p++] = c >= 97 && c <= 122 && rnd() < 0.5 ? c - 32 : c; // 0x20 mixed case
    }
  }
  buf[p++] = 0;
  buf.writeUInt16BE(1, p); // A
  buf.writeUInt16BE(1, p + 2); // IN
  p += 4;
  buf[p] = 0; // OPT
  buf.writeUInt16BE(41, p + 1);
  buf.writeUInt16BE(1232, p + 3);
  return buf;
}

const templates = [];
for (let i = 0; i < names.length * 4; i++) templates.push(encodeQuery(names[i % names.length]));

const MAX_SAMPLES = 2_000_000;
const latencies = new Float64Array(MAX_SAMPLES);
let nLat = 0;
let sent = 0;
let received = 0;
let stopped = false;
const socks = [];

for (let k = 0; k < nSockets; k++) {
  const sock = dgram.createSocket('udp4');
  const sentAt = new Float64Array(65536).fill(-1);
  const st = { sock, sentAt, nextId: 0, inFlight: 0 };
  sock.on('message', (msg) => {
    if (msg.length < 2) return;
    const id = msg.readUInt16BE(0);
    const t = sentAt[id];
    if (t < 0) return;
    sentAt[id] = -1;
    st.inFlight--;
    received++;
    if (nLat < MAX_SAMPLES) latencies[nLat++] = performance.now() - t;
    if (mode === 'max' && !stopped) send(st);
  });
  socks.push(st);
}
await Promise.all(socks.map((st) => new Promise((r) => st.sock.bind(0, '127.0.0.1', r))));
// Connected sockets: no per-send address lookup, so the generator spends less CPU per query.
await Promise.all(socks.map((st) => new Promise((r) => st.sock.connect(port, host, r))));

function send(st) {
  const id = st.nextId;
  st.nextId = (st.nextId + 1) & 0xffff;
  const q = Buffer.from(templates[(sent + id) % templates.length]);
  q.writeUInt16BE(id, 0);
  st.sentAt[id] = performance.now();
  st.inFlight++;
  sent++;
  st.sock.send(q);
}

const start = performance.now();
let ticker;
if (mode === 'max') {
  for (const st of socks) for (let i = 0; i < window; i++) send(st);
  // Lost datagrams would shrink the window: top it up, forgetting ids older than 1 s.
  ticker = setInterval(() => {
    const now = performance.now();
    for (const st of socks) {
      for (let id = 0; id < 65536; id++) {
        if (st.sentAt[id] >= 0 && now - st.sentAt[id] > 1000) {
          st.sentAt[id] = -1;
          st.inFlight--;
        }
      }
      while (!stopped && st.inFlight < window) send(st);
    }
  }, 250);
} else {
  let k = 0;
  ticker = setInterval(() => {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    while (!stopped && sent < due) send(socks[k++ % socks.length]);
  }, 1);
}

await new Promise((r) => setTimeout(r, durationMs));
stopped = true;
const elapsed = (performance.now() - start) / 1000;
clearInterval(ticker);
await new Promise((r) => setTimeout(r, 300)); // drain
for (const st of socks) st.sock.close();

const lat = latencies.subarray(0, nLat).sort();
const pct = (p) => (nLat === 0 ? NaN : lat[Math.min(nLat - 1, Math.floor((p / 100) * nLat))]);
process.send({
  mode,
  sent,
  received,
  lost: sent - received,
  seconds: elapsed,
  qps: received / elapsed,
  p50Ms: pct(50),
  p90Ms: pct(90),
  p99Ms: pct(99),
  p999Ms: pct(99.9),
  maxMs: nLat ? lat[nLat - 1] : NaN,
});
process.disconnect();
