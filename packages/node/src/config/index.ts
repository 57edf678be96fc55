export * from './schema.js';
export {
  loadConfig,
  envName,
  deepMerge,
  ENV_FIELDS,
  ENV_OTHER,
  type LoadConfigOptions,
} from './load.js';
export { resolveAddresses, type ResolvedAddresses } from './resolve.js';
