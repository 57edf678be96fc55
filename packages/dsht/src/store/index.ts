export * from './value-store.js';
