/**
 * @module Attribution of leaked canaries to tenants: a shared tag → tenant directory (memory or D1)
 * and the per-guard helper that writes to it and reads from it.
 */
export {
  type AttributionFailure,
  type Sources,
  TenantAttribution,
  type TenantAttributionOptions,
} from './attribution'
export {
  D1TenantDirectory,
  isolateTenantDirectory,
  MemoryTenantDirectory,
  type MemoryTenantDirectoryOptions,
  type TenantDirectory,
} from './directory'
