export * from './transport.js';
export * from './udp.js';
