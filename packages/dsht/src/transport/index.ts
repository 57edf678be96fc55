export * from './transport.js';
export * from './udp.js';
export * from './sim-network.js';
