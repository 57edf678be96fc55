/** The DNS server's metrics: answers by how the client was located and rcode, rate-limited. */
import { Counter } from 'prom-client';
import { label, sum, type MetricArea, type Reader } from './registry.js';

/** What the DNS server records (the shape @coral/dnssrv takes as its `metrics` component). */
export interface DnsMetricsSink {
  answer(method: string, rcode: string | number): void;
  rateLimited(): void;
}

export function dnsMetrics(
  m: MetricArea,
  rateLimited: Counter<'service'>,
): { dns: DnsMetricsSink; answers: Counter<'method' | 'rcode'>; readers: Reader[] } {
  const answers = new Counter({
    name: `${m.p}dns_answers_total`,
    help: 'DNS answers by the method that located the client, and rcode',
    labelNames: ['method', 'rcode'],
    registers: m.registers,
  });
  return {
    dns: {
      answer: (method, rcode) => answers.inc({ method: label(method), rcode: label(rcode) }),
      rateLimited: () => rateLimited.inc({ service: 'dns' }),
    },
    answers,
    readers: [sum(answers, 'dns', 'method'), sum(rateLimited, 'rateLimited', 'service')],
  };
}
