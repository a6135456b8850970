/**
 * @module Admin routes: review quarantined answers and what the guard has learned. Own bearer secret.
 */
import { Hono } from 'hono'
import { constantTimeEqual } from '../crypto/bytes'
import type { QuarantineQuery } from '../quarantine/store'
import { guardFor } from './config'
import type { DurableCalibration } from './durable-calibration'
import type { Env } from './env'
import { refusalBody } from './openai'

type AdminEnv = { Bindings: Env }

/**
 * `/admin/incidents` (list; filters `since`, `until` (ms), `tenant`, `reason`, `limit`),
 * `/admin/incidents/:id` (one record, withheld text decrypted — only here), `/admin/stats`.
 * Every route needs `Authorization: Bearer <ADMIN_SECRET>`; with no ADMIN_SECRET set they are all off.
 *
 * @example
 * app.route('/admin', adminRoutes())
 */
export function adminRoutes(): Hono<AdminEnv> {
  const admin = new Hono<AdminEnv>()

  admin.use('*', async (c, next) => {
    const secret = c.env.ADMIN_SECRET
    if (!secret || secret.length < 16)
      return c.json(refusalBody('unauthorized', 'Admin routes are disabled.'), 403)
    const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')
    if (!match || !constantTimeEqual(match[1]!, secret)) {
      return c.json(refusalBody('unauthorized', 'Missing or wrong admin secret.'), 401)
    }
    await next()
  })

  admin.get('/incidents', async (c) => {
    const query: QuarantineQuery = {}
    const since = Number(c.req.query('since'))
    const until = Number(c.req.query('until'))
    const limit = Number(c.req.query('limit'))
    if (Number.isFinite(since)) query.since = since
    if (Number.isFinite(until)) query.until = until
    if (Number.isInteger(limit) && limit > 0) query.limit = limit
    const tenant = c.req.query('tenant')
    const reason = c.req.query('reason')
    if (tenant) query.tenant = tenant
    if (reason) query.reason = reason
    return c.json({ data: await guardFor(c.env).quarantine.list(query) })
  })

  admin.get('/incidents/:id', async (c) => {
    const record = await guardFor(c.env).quarantine.get(c.req.param('id'))
    if (!record) return c.json(refusalBody('not_found', 'No such incident.', 'id'), 404)
    return c.json(record)
  })

  admin.get('/stats', async (c) => {
    const guard = guardFor(c.env)
    // Learned margins per script class and timing buckets: what the guard charges beyond the table.
    const store = guard.calibration as Partial<Pick<DurableCalibration, 'report'>>
    const calibration = typeof store.report === 'function' ? await store.report() : {}
    return c.json({ incidents: await guard.quarantine.counts(), calibration })
  })

  return admin
}
