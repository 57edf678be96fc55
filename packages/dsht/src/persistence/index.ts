export * from './persistence.js';
