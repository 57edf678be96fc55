/**
 * Every tunable of the DSHT with its default. Options objects fall back to these with `??`;
 * docs/dsht.md lists them with the reasoning behind each value.
 */

/** Bytes in a node id or key (160 bits, SHA-1). */
export const ID_BYTES = 20;
/** Contacts per k-bucket, and the most a FIND_NODE answer carries. */
export const KBUCKET_SIZE = 20;
/** Contacts in a GET / STORE_PROBE answer, and asked of each peer by a FIND_NODE walk. */
export const WALK_CONTACTS = 8;
/** Queries in flight per lookup. */
export const ALPHA = 3;
/** Cluster levels: 0 global, 1 regional (< 60 ms), 2 metro (< 20 ms). */
export const LEVEL_COUNT = 3;
/** RTT threshold of each level in ms (index = level). */
export const DEFAULT_LEVEL_THRESHOLDS_MS: readonly number[] = [Infinity, 60, 20];

/**
 * Wire format version: the first byte of an open-mode datagram (version 2; version 1 had no
 * tokens, padding or copy marks and is refused). Keyed datagrams start with WIRE_VERSION_KEYED.
 */
export const WIRE_VERSION = 2;
/** First byte of a keyed (authenticated) datagram of wire version 2. */
export const WIRE_VERSION_KEYED = 3;
/** Bytes of a keyed datagram's header after the version byte: key id 4, timestamp 6, nonce 8. */
export const AUTH_HEADER_BYTES = 18;
/** Bytes of a keyed datagram's MAC (HMAC-SHA-256 truncated). */
export const AUTH_TAG_BYTES = 16;
/** What keyed mode adds to every datagram (header + MAC). */
export const AUTH_BYTES = AUTH_HEADER_BYTES + AUTH_TAG_BYTES;
/** HKDF purpose of the keyring subkey that authenticates DSHT datagrams. */
export const DATAGRAM_KEY_PURPOSE = 'coral-dsht-datagram-v1';
/** Accepted distance between a keyed datagram's timestamp and this node's clock, either way. */
export const REPLAY_WINDOW_MS = 60_000;
/** Nonces of keyed datagrams remembered at most (beyond that the replay window narrows). */
export const REPLAY_MAX_NONCES = 65_536;
/** A keyed node with no authenticated traffic for this long, receiving datagrams under key ids it lacks, is isolated. */
export const ISOLATION_AFTER_MS = 30_000;
/** Datagrams under unknown key ids (since the last authenticated one) before a node calls itself isolated. */
export const ISOLATION_MIN_DATAGRAMS = 3;
/** How often isolation is re-evaluated. */
export const ISOLATION_CHECK_MS = 5_000;

/**
 * First byte of a key notice: the 13-byte datagram a keyed node sends back to the source of a
 * keyed datagram under a key id it does not hold (auth/key-notices.ts). It names that key id and
 * echoes the datagram's nonce, nothing else.
 */
export const KEY_NOTICE_VERSION = 4;
/** Bytes of a key notice: version 1, key id 4, nonce 8 (a keyed datagram has at least 36). */
export const KEY_NOTICE_BYTES = 13;
/** Key notices one source host may get (per /24, NET_RATE_MULTIPLIER times this). */
export const KEY_NOTICE_RATE = { perSecond: 0.5, burst: 4 } as const;
/** Key notices a node sends at most, to all sources together. */
export const KEY_NOTICE_GLOBAL_RATE = { perSecond: 20, burst: 40 } as const;
/** Sources (hosts and networks) whose key-notice buckets are kept. */
export const KEY_NOTICE_SOURCES = 2_048;
/** A node reports that a peer does not accept its key at most this often ('key-rejected'). */
export const KEY_REJECTED_REPORT_MS = 60_000;

/** Bytes of a write token (HMAC of the source ip:port under a rotating secret, truncated). */
export const TOKEN_BYTES = 8;
/** Longest token accepted on the wire. */
export const MAX_TOKEN_BYTES = 16;
/** The token secret rotates this often; a token stays valid for one to two periods. */
export const TOKEN_ROTATE_MS = 300_000;
/** Source addresses whose current token is cached. */
export const TOKEN_CACHE_ENTRIES = 4_096;
/** Peers whose last token this node keeps (to prove its round trip to them). */
export const PEER_TOKEN_ENTRIES = 8_192;
/**
 * Size (whole datagram) a request is padded to when this node holds no fresh token from the peer,
 * so the peer's answer fits under the anti-amplification rule (no reply larger than its request
 * before a round trip). PING / STORE are answered with a small message at first contact;
 * FIND_NODE, GET and STORE_PROBE with lists of contacts that may fill a datagram.
 */
export const FIRST_CONTACT_PAD_BYTES = {
  PING: 352,
  FIND_NODE: 1200,
  GET: 1200,
  STORE_PROBE: 1200,
  STORE: 352,
  PING_REQ: 352,
  LEAVE: 352,
} as const;

/**
 * After a peer hands this node its first token, wait this long for a request that carries it
 * anyway before sending one only to introduce this node (see Dsht's introductions).
 */
export const INTRODUCE_DELAY_MS = 2_000;

/** At most this many node ids per IP (per /64 for IPv6) anywhere: tables, members, directory. */
export const MAX_IDS_PER_IP = 1;
/** Verified members remembered (least recently heard forgotten first). */
export const MAX_MEMBERS = 16_384;

/** Per-source request rate limits (token buckets per source IP; per /24 they are NET_RATE_MULTIPLIER times these). */
export const RATE_LIMITS = {
  PING: { perSecond: 20, burst: 40 },
  FIND_NODE: { perSecond: 50, burst: 100 },
  GET: { perSecond: 100, burst: 200 },
  STORE_PROBE: { perSecond: 50, burst: 100 },
  STORE: { perSecond: 50, burst: 100 },
  /** Indirect probes asked of this node: a member asks about one in `probeIntervalMs` at most. */
  PING_REQ: { perSecond: 10, burst: 20 },
  LEAVE: { perSecond: 2, burst: 4 },
} as const;
/** A /24 (IPv6: /48) may send this many times one IP's rate. */
export const NET_RATE_MULTIPLIER = 8;
/** Rate-limit buckets kept (least recently used dropped; a dropped bucket was full or nearly). */
export const RATE_LIMIT_ENTRIES = 16_384;
/** Replies per second to sources that have not completed a round trip (all sources together). */
export const UNVERIFIED_REPLIES_PER_SECOND = 500;
export const UNVERIFIED_REPLIES_BURST = 1_000;
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
/** Hard cap on the number of stored values (bounds memory when values are tiny). */
export const MAX_STORE_VALUES = 131_072;
/** Values one source (IP; IPv6 /64) may hold here: 1/16 of MAX_STORE_VALUES. */
export const MAX_VALUES_PER_SOURCE = 8_192;
/** Bytes one source may hold here: 1/16 of MAX_STORE_BYTES. */
export const MAX_BYTES_PER_SOURCE = 4 * 1024 * 1024;
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
/** Peers whose RTT statistics are kept (the first sampled dropped beyond it). */
export const RTT_PEERS = 4_096;

/** Consecutive failed RPCs after which a contact leaves the routing table. */
export const CONTACT_MAX_FAILURES = 2;
/**
 * A full bucket pings its least recently seen contact only if it was silent this long: BEP 5's
 * "questionable" node (Mainline DHT, 15 minutes); one heard from more recently is good, and a
 * newcomer waits as a replacement without a ping.
 */
export const PING_STALE_MS = 900_000;
/** A bucket not touched for this long is refreshed by a lookup of a random id in its range. */
export const BUCKET_REFRESH_MS = 3_600_000;
/** How often the refresh check runs. */
export const REFRESH_CHECK_MS = 60_000;
/** Member discovery: a random lookup this often while the node knows few members (types.ts). */
export const MEMBER_DISCOVERY_MS = 5_000;
/** Member discovery runs while the node knows fewer verified live members than this. */
export const MEMBER_DISCOVERY_BELOW = 64;
/** Member discovery: at most this many contacts pinged per round. */
export const DISCOVERY_PINGS = 8;

/** How long the i3 shortcut remembers which node answered a key. */
export const SHORTCUT_TTL_MS = 30_000;
/** Entries kept by the shortcut cache. */
export const SHORTCUT_ENTRIES = 1_024;
/**
 * A put of a key this node placed by a walk within this long (and within half the value's TTL)
 * stores it again where the walk placed it, one STORE per level, instead of walking again.
 */
export const PUT_SHORTCUT_MS = 300_000;
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

/** `stop({ leave: true })` waits this long at most for members to acknowledge the LEAVE. */
export const LEAVE_TIMEOUT_MS = 500;

/** LevelDB memtable size of a node's database (`Dsht.open`; LevelDB's default is 4 MiB). */
export const DB_WRITE_BUFFER_BYTES = 1024 * 1024;
/** LevelDB block cache of a node's database (`Dsht.open`; LevelDB's default is 8 MiB). */
export const DB_CACHE_BYTES = 1024 * 1024;
