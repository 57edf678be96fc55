/**
 * The messages between a node's owner (its main thread) and its worker threads, one typed union
 * per direction, each checked on arrival with zod: a message that does not decode is a bug on the
 * other side, refused with `CORAL_ERR_WORKER_PROTOCOL` (logged and dropped by the receiver, never
 * acted on). They travel over the worker's `MessagePort` (structured clone), so they are plain
 * data: no class instances, no functions.
 *
 * Requests carry an `id` (unique per sender); each is answered once by a reply with the same id,
 * `ok: true` with a value or `ok: false` with an error code and message.
 *
 * Owner → worker: `directory` (a new snapshot of the node's directory, pushed on change),
 * `challenges` (the ACME TXT values to answer), `command` (`reload` on SIGHUP, `drain` on
 * shutdown, `stats`), `reply` (to a worker's request).
 * Worker → owner: `ready` (listening, with where), `request` (`hinted`: a DSHT hint walk only the
 * owner can make), `report` (counters since the last report), `done` (reply to a command).
 */
import { z } from 'zod';
import type { Decision, DirectorySnapshot, HintResult, ProbeEntry } from '@coral/dnssrv';
import { WorkerError } from '../errors.js';

const seq = z.number().int().nonnegative();
const port = z.number().int().min(0).max(65535);
const count = z.number().int().nonnegative();
const hexId = z.string().regex(/^[0-9a-f]{40}$/);
const code = z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/);
const text = z.string().max(4096);
const label = z.string().max(64);

/** A proxy as the DNS server knows it (`NodeInfo` of @coral/dnssrv). */
const nodeInfo = z.strictObject({
  id: hexId,
  ipv4: z.ipv4().optional(),
  ipv6: z.ipv6().optional(),
  httpPort: port,
  dnsPort: port.optional(),
  region: z.string().max(64).optional(),
});

/** Fleets are bounded well below this; a larger list is not a snapshot. */
const MAX_NODES = 100_000;

export const snapshotSchema = z.strictObject({
  self: nodeInfo,
  selfLive: z.boolean(),
  levelThresholdsMs: z.array(z.number().positive()).max(8),
  members: z.array(nodeInfo).max(MAX_NODES),
  clusters: z.array(z.array(hexId).max(MAX_NODES)).max(9),
}) satisfies z.ZodType<DirectorySnapshot>;

export const hintResultSchema = z.strictObject({
  nodes: z.array(nodeInfo).max(1024),
  prefix: z.union([z.literal(24), z.literal(16), z.null()]),
}) satisfies z.ZodType<HintResult>;

const challengeSchema = z.strictObject({
  zone: z.string().min(1).max(253),
  value: z.string().min(1).max(255),
  /** Wall-clock time (ms since the epoch: both threads share Date.now) it stops being answered. */
  expiresAt: z.number().int(),
});

/** One DNS decision (`Decision` of @coral/dnssrv), as a worker's `decisions` command answers. */
const decisionSchema = z.strictObject({
  at: z.number(),
  transport: z.enum(['udp', 'tcp']),
  client: z.string().max(64),
  name: z.string().max(512),
  type: z.number().int().min(0).max(65535),
  rcode: z.string().max(32),
  method: z.enum(['view', 'ecs', 'rtt', 'hint', 'random', 'no-proxy', 'none']),
  detail: z.string().max(1024),
  nodes: z.array(hexId).max(64),
  ttl: z.number().int().nonnegative().optional(),
  ecs: z.string().max(64).optional(),
  scope: z.number().int().min(0).max(128).optional(),
  cached: z.boolean(),
  outcome: z.enum(['sent', 'truncated', 'rrl-drop', 'rrl-slip']),
}) satisfies z.ZodType<Decision>;

/** One resolver probe (`ProbeEntry` of @coral/dnssrv), as a worker's `probes` command answers. */
const probeEntrySchema = z.strictObject({
  prefix: z.string().max(64),
  target: z.string().max(64),
  rttMs: z.number().nonnegative().nullable().optional(),
  measuredAt: z.number().optional(),
  expiresAt: z.number().optional(),
  inFlight: z.boolean(),
}) satisfies z.ZodType<ProbeEntry>;

/** Counters as nested objects of numbers (a `DnsStats`): summed key by key over workers. */
export type NumberTree = { [key: string]: number | NumberTree };
const numberTree: z.ZodType<NumberTree> = z.lazy(() =>
  z.record(z.string().max(64), z.union([z.number(), numberTree])),
);

const listening = z.strictObject({ host: z.string().max(64), port });

const command = z.discriminatedUnion('command', [
  z.strictObject({ type: z.literal('command'), id: seq, command: z.literal('reload') }),
  z.strictObject({ type: z.literal('command'), id: seq, command: z.literal('stats') }),
  z.strictObject({ type: z.literal('command'), id: seq, command: z.literal('decisions') }),
  z.strictObject({ type: z.literal('command'), id: seq, command: z.literal('probes') }),
  z.strictObject({
    type: z.literal('command'),
    id: seq,
    command: z.literal('drain'),
    /** How long in-flight work may take before it is cut. */
    graceMs: count,
  }),
]);

/** A reply (`reply` to a worker's request, `done` to an owner's command): a value or an error. */
const answer = <T extends 'reply' | 'done'>(type: T) =>
  z.discriminatedUnion('ok', [
    z.strictObject({ type: z.literal(type), id: seq, ok: z.literal(true), value: z.unknown() }),
    z.strictObject({ type: z.literal(type), id: seq, ok: z.literal(false), code, message: text }),
  ]);

const toWorker = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('directory'), seq, snapshot: snapshotSchema }),
  z.strictObject({ type: z.literal('challenges'), entries: z.array(challengeSchema).max(1024) }),
  command,
  answer('reply'),
]);

const toOwner = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('ready'), dns: listening.nullable() }),
  z.strictObject({
    type: z.literal('request'),
    id: seq,
    op: z.literal('hinted'),
    target: z.strictObject({
      ip: z.union([z.ipv4(), z.ipv6()]),
      subnet: z.string().max(64).optional(),
    }),
    count: z.number().int().min(1).max(1024),
  }),
  z.strictObject({
    type: z.literal('report'),
    /** DNS answers since the last report: [method, rcode, count]. */
    answers: z.array(z.tuple([label, label, count])).max(1024),
    /** UDP answers dropped or slipped by rate limiting since the last report. */
    rateLimited: count,
    /** The worker's DNS server's `stats()` now (cumulative). */
    stats: numberTree.optional(),
  }),
  answer('done'),
]);

export type ToWorker = z.output<typeof toWorker>;
export type ToOwner = z.output<typeof toOwner>;
export type WorkerCommand = Extract<ToWorker, { type: 'command' }>;
/** A command as the supervisor is asked to send it (it adds the id). */
export type CommandBody = WorkerCommand extends infer C
  ? C extends WorkerCommand
    ? Omit<C, 'id'>
    : never
  : never;
export type WorkerRequest = Extract<ToOwner, { type: 'request' }>;
export type WorkerReport = Extract<ToOwner, { type: 'report' }>;
export type ReadyMessage = Extract<ToOwner, { type: 'ready' }>;
export type ChallengeEntry = z.output<typeof challengeSchema>;

/** What a worker is started with (`workerData`), checked by the worker before anything else. */
export const workerDataSchema = z.strictObject({
  /** 0..N-1, stable across restarts: a worker's name in logs and metrics. */
  index: z.number().int().min(0).max(1023),
  /** The node's validated configuration (a structured clone of the frozen object). */
  config: z.record(z.string(), z.unknown()),
  snapshot: snapshotSchema,
  challenges: z.array(challengeSchema).max(1024),
  /** Where to listen: the port worker 0 bound when the configuration said 0. */
  dns: listening.nullable(),
});
export type WorkerData = z.output<typeof workerDataSchema>;

function decode<T>(schema: z.ZodType<T>, what: string, value: unknown): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const at = issue.path.length > 0 ? ` at ${issue.path.map(String).join('.')}` : '';
  throw new WorkerError('CORAL_ERR_WORKER_PROTOCOL', `malformed ${what}${at}: ${issue.message}`);
}

/** A message from the owner, checked; throws `CORAL_ERR_WORKER_PROTOCOL`. */
export const decodeToWorker = (value: unknown): ToWorker =>
  decode(toWorker, 'message to a worker', value);
/** A message from a worker, checked; throws `CORAL_ERR_WORKER_PROTOCOL`. */
export const decodeToOwner = (value: unknown): ToOwner =>
  decode(toOwner, 'message from a worker', value);
/** A worker's start data, checked; throws `CORAL_ERR_WORKER_PROTOCOL`. */
export const decodeWorkerData = (value: unknown): WorkerData =>
  decode(workerDataSchema, 'workerData', value);
/** The value of a reply to `hinted`, checked; throws `CORAL_ERR_WORKER_PROTOCOL`. */
export const decodeHintResult = (value: unknown): HintResult =>
  decode(hintResultSchema, 'hinted reply', value);
/** The value of a reply to `decisions`, checked; throws `CORAL_ERR_WORKER_PROTOCOL`. */
export const decodeDecisions = (value: unknown): Decision[] =>
  decode(z.array(decisionSchema).max(4096), 'decisions reply', value);
/** The value of a reply to `probes`, checked; throws `CORAL_ERR_WORKER_PROTOCOL`. */
export const decodeProbes = (value: unknown): ProbeEntry[] =>
  decode(z.array(probeEntrySchema).max(100_000), 'probes reply', value);
/** The value of a reply to `stats`, checked; throws `CORAL_ERR_WORKER_PROTOCOL`. */
export const decodeNumberTree = (value: unknown): NumberTree =>
  decode(numberTree, 'stats reply', value);

/** `a + b`, key by key, at every depth (a key only one side has is kept as it is). */
export function sumTrees(a: NumberTree, b: NumberTree): NumberTree {
  const out: NumberTree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    if (typeof v === 'number') out[k] = (typeof prev === 'number' ? prev : 0) + v;
    else out[k] = sumTrees(typeof prev === 'object' ? prev : {}, v);
  }
  return out;
}
