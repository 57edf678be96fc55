/**
 * What the dashboard's script reads: the answer of `GET /v1/dashboard` (admin/dashboard/data.ts)
 * and the series the page draws and counts.
 */
import type { DashboardView } from '../data.js';

export interface DnsDecision {
  at: number;
  client: string;
  name: string;
  rcode: string;
  method: string;
  detail: string;
  nodes: string[];
}

export type View = Omit<DashboardView, 'dnsRecent'> & { dnsRecent: DnsDecision[] };

export const OUTCOMES = [
  { key: 'hit', label: 'hit', color: '#3fb950' },
  { key: 'peer', label: 'peer', color: '#58a6ff' },
  { key: 'miss', label: 'miss', color: '#d29922' },
  { key: 'error', label: 'error', color: '#f85149' },
];
export const BYTES = [
  { key: 'sent.client', label: 'to clients', color: '#ff7a59' },
  { key: 'received.peer', label: 'from peers', color: '#58a6ff' },
  { key: 'received.origin', label: 'from origin', color: '#d29922' },
];
