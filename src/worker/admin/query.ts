/**
 * @module `GET /admin/incidents`' JSON filters, read strictly: a filter given with a value it cannot
 * be is a 400 naming it, never silently dropped (an ignored `limit` or `since` answers another question
 * than the one asked).
 */

import type { QuarantineQuery } from '../../core'
import { GuardError } from '../../core'

/** The most incidents one page returns (the store's own cap). */
const MAX_LIMIT = 1000

/**
 * The query of `params`; throws a 400 `invalid_request` naming the first filter with a bad value.
 *
 * @example
 * incidentQuery(new URLSearchParams('limit=5&tenant=tenant-b')) // { limit: 5, tenant: 'tenant-b' }
 */
export function incidentQuery(params: URLSearchParams): QuarantineQuery {
  const query: QuarantineQuery = {}
  for (const name of ['since', 'until'] as const) {
    const raw = params.get(name)
    if (raw === null) continue
    const value = Number(raw)
    if (raw.trim() === '' || !Number.isFinite(value)) {
      throw refused(name, `${name} must be a time in milliseconds since 1970 (got ${shown(raw)}).`)
    }
    query[name] = value
  }
  const limit = params.get('limit')
  if (limit !== null) {
    const value = Number(limit)
    if (!/^\d+$/.test(limit.trim()) || value < 1 || value > MAX_LIMIT) {
      throw refused(
        'limit',
        `limit must be a whole number from 1 to ${MAX_LIMIT} (got ${shown(limit)}).`,
      )
    }
    query.limit = value
  }
  const tenant = params.get('tenant')
  const reason = params.get('reason')
  if (tenant) query.tenant = tenant
  if (reason) query.reason = reason
  return query
}

function refused(param: string, message: string): GuardError {
  return new GuardError('invalid_request', message, { param })
}

/** A value as the message quotes it: JSON-escaped and short, whatever the client sent. */
function shown(raw: string): string {
  return JSON.stringify(raw.slice(0, 40))
}
