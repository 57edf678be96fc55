/** DNS wire numbers (RFC 1035, 3596, 6891, 7871). Wire numbers, not thrown error codes. */
export const TYPE = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  TXT: 16,
  AAAA: 28,
  OPT: 41,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
} as const;

export const CLASS = { IN: 1, ANY: 255 } as const;

export const RCODE = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  /** Extended rcode 16 (needs OPT): 0 in the header, 1 in the OPT's extended-rcode byte. */
  BADVERS: 16,
} as const;

export const RCODE_NAME: Record<number, string> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  16: 'BADVERS',
};

/** EDNS option code of Client Subnet (RFC 7871). */
export const OPTION_ECS = 8;
/** Header size in bytes. */
export const HEADER_SIZE = 12;
/** The UDP limit of a client that sends no OPT (RFC 1035 §4.2.1). */
export const CLASSIC_UDP_LIMIT = 512;
