// The Node load generator of bench/http.mjs (autocannon), used when wrk is not installed or with
// --node-generator. It runs as a process of its own so the bench can pin it apart from the server:
//   node bench/http-load.mjs '{"url":...,"host":...,"connections":64,"seconds":5}'
// and prints one JSON line with the same fields the bench reads from wrk.
import autocannon from 'autocannon';

const { url, host, connections, seconds } = JSON.parse(process.argv[2]);
const r = await autocannon({
  url,
  connections,
  duration: seconds,
  headers: host ? { host } : {},
});
console.log(
  JSON.stringify({
    requests: r.requests.total,
    durationS: r.duration,
    bytes: r.throughput.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    // autocannon's histogram is in milliseconds.
    p50Ms: r.latency.p50,
    p90Ms: r.latency.p90,
    p99Ms: r.latency.p99,
    p999Ms: r.latency.p99_9,
  }),
);
