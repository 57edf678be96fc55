export * from './messages.js';
export { encode, decode, TypeCode } from './codec.js';
