/**
 * Every tunable of the DSHT with its default. Options objects fall back to these with `??`;
 * docs/dsht.md lists them with the reasoning behind each value.
 */

/** Bytes in a node id or key (160 bits, SHA-1). */
export const ID_BYTES = 20;
/** Contacts per k-bucket, and contacts returned by FIND_NODE / GET / STORE_PROBE. */
export const KBUCKET_SIZE = 20;
/** Contacts in a GET / STORE_PROBE answer (FIND_NODE answers carry k). */
export const WALK_CONTACTS = 8;
/** Queries in flight per lookup. */
export const ALPHA = 3;
/** Cluster levels: 0 global, 1 regional (< 60 ms), 2 metro (< 20 ms). */
export const LEVEL_COUNT = 3;
/** RTT threshold of each level in ms (index = level). */
export const DEFAULT_LEVEL_THRESHOLDS_MS: readonly number[] = [Infinity, 60, 20];

/** Wire format version, the first byte of every datagram. */
export const WIRE_VERSION = 1;
/** Largest datagram sent or accepted. */
export const MAX_DATAGRAM_BYTES = 1200;
/** Largest value accepted by put / STORE. */
export const MAX_VALUE_BYTES = 512;
/** Longest TTL accepted for a value (one day). */
export const MAX_TTL_SECONDS = 86_400;
/** Largest region label advertised in a contact. */
export const MAX_REGION_LENGTH = 64;

/** Coral's l: a node is full for a key with this many values whose remaining TTL ≥ half the new one's. */
export const FULL_VALUES = 4;
/** Coral's β: a node is loaded for a key after this many stores in the leak window. */
export const LOADED_STORES = 12;
/** Leak window of the loaded rule: the bucket drains LOADED_STORES per this many ms. */
export const LOADED_WINDOW_MS = 60_000;
/** Hard cap on values kept per (level, key), whatever the TTLs. */
export const MAX_VALUES_PER_KEY = 64;
/** Hard cap on the bytes of all stored values (value bytes + fixed overhead per entry). */
export const MAX_STORE_BYTES = 64 * 1024 * 1024;
/** Per-entry overhead counted against MAX_STORE_BYTES. */
export const STORE_ENTRY_OVERHEAD = 64;
/** How often expired values are swept. */
export const EXPIRY_SWEEP_MS = 60_000;
/** Values returned by one GET answer. */
export const GET_MAX_VALUES = 4;

/** RPC timeout of a first attempt to a peer with no RTT estimate. */
export const RPC_TIMEOUT_MS = 1_000;
/** Bounds of the adaptive timeout (srtt + 4·rttvar). */
export const RPC_MIN_TIMEOUT_MS = 250;
export const RPC_MAX_TIMEOUT_MS = 4_000;
/** Retransmissions after the first attempt. */
export const RPC_RETRIES = 2;
/** Timeout multiplier per retransmission. */
export const RPC_BACKOFF = 2;
/** Peers whose RTT statistics are kept (least recently used dropped). */
export const RTT_PEERS = 4_096;

/** Consecutive failed RPCs after which a contact leaves the routing table. */
export const CONTACT_MAX_FAILURES = 2;
/** A full bucket pings its least recently seen contact only if it was silent this long. */
export const PING_STALE_MS = 60_000;
/** A bucket not touched for this long is refreshed by a lookup of a random id in its range. */
export const BUCKET_REFRESH_MS = 3_600_000;
/** How often the refresh check runs. */
export const REFRESH_CHECK_MS = 60_000;

/** How long the i3 shortcut remembers which node answered a key. */
export const SHORTCUT_TTL_MS = 30_000;
/** Entries kept by the shortcut cache. */
export const SHORTCUT_ENTRIES = 1_024;
/** Path caching copies values to the last node that lacked them when the answer took at least this many hops. */
export const PATH_CACHE_MIN_HOPS = 2;
/** Visited nodes the reverse phase of a put tries before giving up. */
export const PUT_REVERSE_TRIES = 8;

/** How often dirty contacts are written to the database. */
export const PERSIST_INTERVAL_MS = 1_000;
/** Contacts written per level. */
export const PERSIST_MAX_CONTACTS = 200;

/** Lifetime of a locality hint record (a node re-puts it every HINT_REFRESH_MS). */
export const HINT_TTL_SECONDS = 600;
/** How often a node re-publishes its hints. */
export const HINT_REFRESH_MS = 300_000;
/** A node counts as live when heard from within this window (NodeDirectory). */
export const LIVE_WINDOW_MS = 120_000;
