export * from './rpc.js';
export * from './rtt.js';
export { dispatch, type HandlerContext } from './handlers/index.js';
