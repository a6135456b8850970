/**
 * @module Reading a stored incident row back: every column checked against what the D1 store writes,
 * because anyone with write access to the database can edit one, and a page that trusts it crashes.
 */
import type { QuarantineSummary } from '../vocabulary/quarantine'
import { UnreadableIncidentError } from './unreadable'

/** An `incidents` row as D1 returns it (values typed as written; an edited row may hold anything). */
export interface IncidentRow {
  id: string
  at: number
  tenant: string
  model: string
  request_id: string
  reasons: string
  figures: string
  canaries: string
  source_tenants: string
  /** The sealing key's id; null for records sealed before key ids. */
  key_id?: string | null
  count: number
  last_at: number | null
  /** 1: released under observe (migrations/0008_incident_observed.sql). */
  observed: number
  /** D1 returns BLOBs as arrays of bytes. */
  withheld_iv?: number[] | ArrayBuffer
  withheld?: number[] | ArrayBuffer
}

type Figures = QuarantineSummary['figures']
type Canary = QuarantineSummary['canaries'][number]

/**
 * The summary of `row`, every column checked; a column this store never writes throws
 * {@link UnreadableIncidentError} (`corrupt`, naming the column and never its bytes).
 *
 * @example
 * const summary = readSummary(row) // throws for a row whose `figures` is not JSON
 */
export function readSummary(row: IncidentRow): QuarantineSummary {
  const { summary, corrupt } = checkedSummary(row)
  if (corrupt !== undefined)
    throw new UnreadableIncidentError(String(row.id), 'corrupt', { column: corrupt })
  return summary
}

/**
 * The summary of `row` for a list: a corrupt row is listed all the same, marked `unreadable` (the
 * 409's message), with what could be read and empty values for the rest, so one edited row never
 * hides the others.
 *
 * @example
 * results.map(listedSummary)
 */
export function listedSummary(row: IncidentRow): QuarantineSummary {
  const { summary, corrupt } = checkedSummary(row)
  if (corrupt === undefined) return summary
  const error = new UnreadableIncidentError(summary.id, 'corrupt', { column: corrupt })
  return { ...summary, unreadable: error.message }
}

/**
 * The withheld text of record `id` from its decrypted JSON. Authenticated decryption means this store
 * wrote it, so a wrong shape is a bug or a leaked key: refused all the same, never shown half-read.
 *
 * @example
 * const withheld = readWithheld(row.id, await unseal(key, iv, data, row.id))
 */
export function readWithheld(id: string, plain: string): Record<string, string> {
  const value = parse(plain)
  if (!isRecord(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw new UnreadableIncidentError(id, 'corrupt', { column: 'withheld' })
  }
  return value as Record<string, string>
}

/** The summary with safe stand-ins for bad columns, and the first bad column's name, if any. */
function checkedSummary(row: IncidentRow): { summary: QuarantineSummary; corrupt?: string } {
  let corrupt: string | undefined
  function take<T>(column: string, value: T | undefined, fallback: T): T {
    if (value !== undefined) return value
    corrupt ??= column
    return fallback
  }
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined)
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)
  const optional = (v: unknown) => (v === null || v === undefined ? null : num(v))
  const id = take('id', text(row.id), String(row.id))
  const lastAt = take('last_at', optional(row.last_at), null)
  const summary: QuarantineSummary = {
    id,
    at: take('at', num(row.at), 0),
    tenant: take('tenant', text(row.tenant), ''),
    model: take('model', text(row.model), ''),
    requestId: take('request_id', text(row.request_id), ''),
    reasons: take('reasons', strings(parse(row.reasons)), []),
    figures: take('figures', figures(parse(row.figures)), {}),
    canaries: take('canaries', canaries(parse(row.canaries)), []),
    sourceTenants: take('source_tenants', strings(parse(row.source_tenants)), []),
  }
  const count = take('count', optional(row.count), null)
  // Absent means 1, as in every store: records that were never folded read as before.
  if (count !== null && count > 1) summary.count = count
  if (lastAt !== null) summary.lastAt = lastAt
  if (typeof row.key_id === 'string' && row.key_id) summary.keyId = row.key_id
  if (row.observed === 1) summary.observed = true
  return corrupt === undefined ? { summary } : { summary, corrupt }
}

function parse(value: unknown): unknown {
  if (typeof value !== 'string') return undefined
  try {
    return JSON.parse(value)
  } catch {
    return undefined
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined
}

/**
 * Figures are numbers, flags and lists of numbers. `null` is what JSON makes of a NaN or an infinite
 * figure the guard once wrote: read as absent, not as a corrupt row.
 */
function figures(value: unknown): Figures | undefined {
  if (!isRecord(value)) return undefined
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) {
    if (v === null) continue
    const ok =
      typeof v === 'number' ||
      typeof v === 'boolean' ||
      (Array.isArray(v) && v.every((n) => typeof n === 'number'))
    if (!ok) return undefined
    out[key] = v
  }
  return out as Figures
}

function canaries(value: unknown): Canary[] | undefined {
  if (!Array.isArray(value)) return undefined
  const ok = value.every(
    (c) =>
      isRecord(c) &&
      typeof c.kind === 'string' &&
      ['tenantTag', 'channel', 'standIn'].every(
        (k) => c[k] === undefined || typeof c[k] === 'string',
      ) &&
      (c.tenants === undefined || strings(c.tenants) !== undefined),
  )
  return ok ? (value as Canary[]) : undefined
}
