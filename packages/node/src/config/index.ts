export * from './schema.js';
export { loadConfig, loadStartConfig, deepMerge, type LoadConfigOptions } from './load.js';
export { envName, ENV_FIELDS, ENV_OTHER } from './env.js';
export {
  resolveAddresses,
  resolveBootstrap,
  checkAdvertise,
  type ResolvedAddresses,
  type BootstrapResolution,
  type NameLookup,
} from './resolve.js';
