export * from './schema.js';
export {
  loadConfig,
  loadStartConfig,
  envName,
  deepMerge,
  ENV_FIELDS,
  ENV_OTHER,
  type LoadConfigOptions,
} from './load.js';
export {
  resolveAddresses,
  resolveBootstrap,
  checkAdvertise,
  type ResolvedAddresses,
  type BootstrapResolution,
  type NameLookup,
} from './resolve.js';
