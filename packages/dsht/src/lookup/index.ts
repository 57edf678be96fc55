export * from './lookup.js';
