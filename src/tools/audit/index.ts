/**
 * @module `workers-ai-guard audit`: find the KV-cache incident's signature in exported request logs
 * (docs/audit.md). Pure apart from `nodeLogSource` (the Node file adapter).
 */
export { PROOF_UNITS, SOURCE_UNITS } from './assess'
export { runAudit } from './audit'
export { AUDIT_USAGE, type AuditIo, auditCommand, auditProgressLine } from './audit-command'
export { ContentIndex, type ContentIndexStats } from './content-index'
export type {
  AuditOptions,
  AuditProgress,
  AuditReport,
  DataFlow,
  FileReport,
  Finding,
  ForeignSource,
  LogSource,
  SourceRequest,
} from './findings'
export { detectFormat, readValue, timeMs } from './formats'
export { linesOf } from './lines'
export { nodeLogSource } from './node-files'
export { type AuditRecord, type CheckName, FORMAT_LIMITS, type LogFormat } from './record'
export { CSV_COLUMNS, renderAuditCsv, renderAuditJson, renderAuditText } from './render-report'
export {
  recordSignals,
  SIGNAL_DEFAULTS,
  type Signal,
  type SignalSettings,
  verdictSignals,
} from './signals'
