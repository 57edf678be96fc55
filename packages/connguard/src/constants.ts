/**
 * Defaults of the connection budgets (docs/connguard.md, docs/security.md "Connection budgets").
 * They are sized to hold, without tuning, against an idle flood from a few addresses at a
 * descriptor limit of 1,024 as at 20,000, while a NAT of browsers (6 connections each) and a
 * fleet member's peer pool (8 connections) stay well inside the per-client caps.
 */

/** Connections one client may hold on a listener: an IPv4 address, an IPv6 /64. */
export const DEFAULT_PER_ADDRESS = 128;
/** Connections one network may hold on a listener: an IPv4 /24, an IPv6 /56. */
export const DEFAULT_PER_PREFIX = 512;
/** What counts as one client: the IPv4 address, the IPv6 /64 (one host's subnet). */
export const DEFAULT_ADDRESS_BITS = { ipv4: 32, ipv6: 64 } as const;
/** What counts as one network: the IPv4 /24, the IPv6 /56 (a customer's allocation). */
export const DEFAULT_PREFIX_BITS = { ipv4: 24, ipv6: 56 } as const;

/** A connection that has sent nothing at all this long after it was accepted is closed. */
export const DEFAULT_IDLE_TIMEOUT_MS = 10_000;
/** A kept-alive connection that starts no new request this long after its last response is closed. */
export const DEFAULT_KEEPALIVE_TIMEOUT_MS = 5_000;
/**
 * A request head (HTTP headers, a DNS query) must be complete this long after the connection
 * began waiting for it (accepted, or its previous response finished); trickled bytes do not
 * extend it (nginx's client_header_timeout, from the connection; Apache mod_reqtimeout's 20 s).
 */
export const DEFAULT_HEADER_TIMEOUT_MS = 20_000;
/** Longest gap between two reads of a request body the server is reading (client_body_timeout). */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

/** The descriptors kept back from client connections: this fraction of the limit ... */
export const DEFAULT_RESERVE_FRACTION = 0.25;
/** ... and at least this many (origin and peer connections, DSHT, DNS, disk, admin). */
export const DEFAULT_RESERVE_MIN = 128;
/** The ceiling derived from a large descriptor limit stops here (memory, not descriptors, bounds it). */
export const DEFAULT_CEILING_MAX = 16_384;
/** The descriptor limit assumed when the process cannot read its own (the common soft limit). */
export const ASSUMED_DESCRIPTOR_LIMIT = 1_024;
