/**
 * @module The admin router: the console's pages and the JSON API, one auth (a session or the bearer
 * secret), strict headers on every response.
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { html } from 'hono/html'
import { type CalibrationReport, type QuarantineRecord, UnreadableIncidentError } from '../../core'
import { type BodyBudget, readForm } from '../body'
import { bodyPace, guardFor } from '../config'
import type { DurableCalibration } from '../durable-calibration'
import type { Env } from '../env'
import { metricsResponse } from '../metrics'
import { refusalBody } from '../openai'
import type { TelemetryReader } from '../telemetry/types'
import { telemetryFor } from '../telemetry/worker-telemetry'
import {
  bearerMatches,
  CSRF_FIELD,
  clearedCookie,
  LoginLimiter,
  mintSession,
  readCookie,
  type Session,
  sameOrigin,
  sessionCookie,
  verifySession,
} from './auth'
import {
  incidentPage,
  type OverviewSources,
  observedFilter,
  overviewData,
  parseFilters,
} from './data'
import { incidentDetail, type ProfileFigures } from './pages/incident'
import { incidentList } from './pages/incidents'
import { type Html, layout, loginPage } from './pages/layout'
import { overview } from './pages/overview'
import { unreadableBody } from './pages/unreadable-incident'
import { incidentQuery } from './query'
import { redactCanaries } from './redact'
import { sessionStore } from './sessions'
import { CONSOLE_CSS, STYLE_PATH } from './style'

/** How a request was let in: a browser session (its CSRF token), or the bearer secret. */
type Auth = { kind: 'session'; session: Session } | { kind: 'bearer' }

type AdminEnv = { Bindings: Env; Variables: { adminAuth: Auth } }
type AdminContext = Context<AdminEnv>

/** Options of the admin router (tests inject the clock and the telemetry). */
interface AdminOptions {
  /** Clock for sessions and the login brake. @default Date.now */
  now?: () => number
  /**
   * The verdict samples the overview plots. @default the Worker's D1 telemetry (`telemetryFor`);
   * none: only withheld answers (from the quarantine store) are plotted.
   */
  telemetry?: (env: Env) => TelemetryReader | undefined
}

/**
 * The Content-Security-Policy of every admin response: nothing but this origin's stylesheet and
 * images, no script at all (the console needs none), no framing, forms post only here.
 */
const ADMIN_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

/** Incidents per list page. */
const PAGE_SIZE = 50
/**
 * Largest body any console route reads (the login form: a secret and a path; logout: its CSRF token),
 * counted as it streams whatever the headers say. The console's bodies are not charged to memory
 * admission: at this size they cost nothing, and an unauthenticated route must not be able to take the
 * model requests' budget.
 */
const MAX_FORM_BYTES = 4096

/**
 * The admin routes, mounted at `/admin`:
 * - console (HTML, when the request accepts `text/html`): `/admin/` overview, `/admin/incidents` list,
 *   `/admin/incidents/:id` detail; `/admin/login` (GET form, POST), `/admin/logout` (POST);
 * - JSON (any other Accept, unchanged for bearer clients): `/admin/incidents` (filters `since`, `until`
 *   (ms), `tenant`, `reason`, `observed` (1 or 0), `limit`), `/admin/incidents/:id` (withheld text decrypted), `/admin/stats`;
 * - `/admin/metrics` (OpenMetrics text).
 * Every route but login and the stylesheet needs a session cookie or `Authorization: Bearer
 * <ADMIN_SECRET>`; with no ADMIN_SECRET (or one under 16 characters) every route answers 403.
 *
 * @example
 * app.route('/admin', adminRoutes())
 */
export function adminRoutes(options: AdminOptions = {}): Hono<AdminEnv> {
  const now = options.now ?? Date.now
  const admin = new Hono<AdminEnv>()
  admin.use('*', securityHeaders)
  admin.use('*', async function enabled(c, next) {
    const secret = c.env.ADMIN_SECRET
    if (!secret || secret.length < 16)
      return c.json(refusalBody('unauthorized', 'Admin routes are disabled.'), 403)
    await next()
  })
  admin.get('/assets/:file', stylesheet)
  admin.get('/login', (c) => page(c, loginPage({ next: safeNext(c.req.query('next')) })))
  admin.post('/login', login(now, new LoginLimiter()))
  admin.use('*', authenticate(now))
  admin.post('/logout', async (c) => {
    // The record goes first: the cookie may have been copied, and clearing it in this browser alone
    // would leave that copy working in every isolate.
    const auth = c.var.adminAuth
    if (auth.kind === 'session') await sessionStore(c.env).revoke(auth.session.id)
    c.header('set-cookie', clearedCookie())
    return c.redirect('/admin/login', 303)
  })
  admin.get('/incidents', incidents)
  admin.get('/incidents/:id', incident)
  admin.get('/stats', async (c) =>
    c.json({
      incidents: await guardFor(c.env).quarantine.counts(),
      calibration: await calibrationReport(c.env),
    }),
  )
  admin.get('/metrics', (c) => metricsResponse(c.env))
  // Last, so every named route above wins: Hono joins '/admin' + '/' into '/admin', so the overview's
  // canonical '/admin/' is matched here, and anything else under /admin is not found.
  admin.get('/*', overviewRoute(now, options.telemetry ?? defaultTelemetry))
  return admin
}

/** The stylesheet, under its content-hashed name only. */
function stylesheet(c: AdminContext): Response {
  if (c.req.path !== STYLE_PATH) return c.json(refusalBody('not_found', 'Not found.'), 404)
  return c.body(CONSOLE_CSS, 200, {
    'content-type': 'text/css; charset=utf-8',
    'cache-control': 'public, max-age=31536000, immutable',
  })
}

/** `POST /admin/login`: the secret for a session cookie, then back to where the browser was going. */
function login(now: () => number, limiter: LoginLimiter) {
  return async function login(c: AdminContext): Promise<Response> {
    // No session yet, so no token to check: the origin check stops a cross-site form logging the
    // browser into the attacker's session (login CSRF) — which would need ADMIN_SECRET anyway.
    if (!sameOrigin(c.req.raw)) return forbidden(c)
    const client = c.req.header('cf-connecting-ip') ?? 'unknown'
    const wait = limiter.retryAfter(client, now())
    if (wait > 0) {
      c.header('retry-after', String(Math.ceil(wait / 1000)))
      return page(c, loginPage({ error: 'Too many failed attempts; wait a minute.' }), 429)
    }
    const form = await readForm(c.req.raw, consoleBody(c.env))
    const given = form.secret ?? ''
    const next = safeNext(form.next)
    const secret = c.env.ADMIN_SECRET!
    if (!bearerMatches(`Bearer ${given}`, secret)) {
      limiter.fail(client, now())
      return page(c, loginPage({ error: 'Wrong admin secret.', next }), 401)
    }
    const value = await mintSession(secret, now())
    const session = (await verifySession(secret, value, now()))!
    await sessionStore(c.env).add(session.id, session.expires, now())
    c.header('set-cookie', sessionCookie(value))
    return c.redirect(next, 303)
  }
}

/** `GET /admin/incidents`: the list page for browsers, the JSON API (as before) for everyone else. */
async function incidents(c: AdminContext): Promise<Response> {
  const store = guardFor(c.env).quarantine
  if (wantsHtml(c)) {
    const filters = parseFilters(new URL(c.req.url).searchParams)
    const found = await incidentPage(store, filters, PAGE_SIZE)
    return consolePage(c, {
      title: 'Incidents',
      section: 'incidents',
      body: incidentList(found, filters),
    })
  }
  const query = incidentQuery(new URL(c.req.url).searchParams)
  const observed = observedFilter(c.req.query('observed'))
  if (observed !== undefined) query.observed = observed
  return c.json({ data: await store.list(query) })
}

/**
 * `GET /admin/incidents/:id`: the detail page, or the record (withheld text decrypted) as JSON. A
 * record the store will not open is bad stored data, not a fault: a 409 that says which key and what
 * to do, never the text.
 */
async function incident(c: AdminContext): Promise<Response> {
  let record: QuarantineRecord | undefined
  try {
    record = await guardFor(c.env).quarantine.get(c.req.param('id') ?? '')
  } catch (error) {
    if (error instanceof UnreadableIncidentError) return unreadableIncident(c, error)
    throw error
  }
  if (wantsHtml(c)) {
    if (!record)
      return consolePage(
        c,
        { title: 'No such incident', section: 'incidents', body: notFoundBody() },
        404,
      )
    const detail = incidentDetail(record, profileFigures(c.env, record.model))
    return consolePage(c, { title: `Incident ${record.id}`, section: 'incidents', body: detail })
  }
  if (!record) return c.json(refusalBody('not_found', 'No such incident.', 'id'), 404)
  return c.json(record)
}

/** The 409 for a record whose text cannot be read, logged so the operator finds it without the console. */
function unreadableIncident(
  c: AdminContext,
  error: UnreadableIncidentError,
): Promise<Response> | Response {
  console.error(
    JSON.stringify({
      event: 'ai_guard_incident_unreadable',
      incident: error.incidentId,
      reason: error.reason,
      ...(error.keyId ? { keyId: error.keyId } : {}),
      ...(error.column ? { column: error.column } : {}),
    }),
  )
  if (wantsHtml(c)) {
    const body = unreadableBody(error)
    return consolePage(c, { title: 'Incident cannot be opened', section: 'incidents', body }, 409)
  }
  return c.json(refusalBody('incident_unreadable', error.message, 'id'), 409)
}

/** `GET /admin/`: the overview (`?model=`, `?days=` 1, 7, 14 or 30). */
function overviewRoute(now: () => number, telemetry: (env: Env) => TelemetryReader | undefined) {
  return async function overviewRoute(c: AdminContext): Promise<Response> {
    if (c.req.path !== '/admin/' && c.req.path !== '/admin') {
      return c.json(refusalBody('not_found', 'Not found.'), 404)
    }
    const days = Number(c.req.query('days'))
    const model = c.req.query('model')
    const sources: OverviewSources = {
      store: guardFor(c.env).quarantine,
      telemetry: telemetry(c.env),
      profileRate: (m) => profileRate(c.env, m),
      calibration: () => calibrationReport(c.env),
    }
    const data = await overviewData(sources, {
      now: now(),
      days: [1, 7, 14, 30].includes(days) ? days : 14,
      ...(model ? { model } : {}),
    })
    return consolePage(c, { title: 'Overview', section: 'overview', body: overview(data) })
  }
}

/**
 * Lets in a valid session or the bearer secret. Anything else: a browser is sent to the login page,
 * an API client gets a 401. A state-changing request on a session must come from this origin and
 * carry the session's CSRF token; the bearer header is never sent by a browser on its own, so it
 * needs neither.
 */
function authenticate(now: () => number): MiddlewareHandler<AdminEnv> {
  return async function authenticate(c, next) {
    const secret = c.env.ADMIN_SECRET!
    if (bearerMatches(c.req.header('authorization'), secret)) {
      c.set('adminAuth', { kind: 'bearer' })
      return await next()
    }
    const session = await liveSession(c.env, readCookie(c.req.header('cookie')), now())
    if (!session) {
      if (c.req.method === 'GET' && wantsHtml(c)) {
        const url = new URL(c.req.url)
        return c.redirect(`/admin/login?next=${encodeURIComponent(url.pathname + url.search)}`, 303)
      }
      return c.json(refusalBody('unauthorized', 'Missing or wrong admin secret.'), 401)
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      if (!sameOrigin(c.req.raw)) return forbidden(c)
      const header = c.req.header('x-csrf-token')
      const form = header === undefined ? await readForm(c.req.raw, consoleBody(c.env)) : {}
      const token = header ?? form[CSRF_FIELD] ?? ''
      if (!bearerMatches(`Bearer ${token}`, session.csrf)) return forbidden(c)
    }
    c.set('adminAuth', { kind: 'session', session })
    await next()
  }
}

/** What a console route may read of a body: a small form, at the Worker's pace. */
function consoleBody(env: Env): BodyBudget {
  return { limit: MAX_FORM_BYTES, pace: bodyPace(env) }
}

/**
 * The session a cookie stands for while its record lives: signed, unexpired and not logged out in any
 * isolate. A store that cannot be read lets no session in (fail closed); the bearer secret still works.
 */
async function liveSession(
  env: Env,
  cookie: string | undefined,
  now: number,
): Promise<Session | undefined> {
  const session = await verifySession(env.ADMIN_SECRET!, cookie, now)
  if (!session) return undefined
  try {
    return (await sessionStore(env).live(session.id, now)) ? session : undefined
  } catch (error) {
    console.error(JSON.stringify({ event: 'ai_guard_session_store_failed', error: String(error) }))
    return undefined
  }
}

/** The headers every admin response carries; pages and API answers are never cached. */
const securityHeaders: MiddlewareHandler<AdminEnv> = async function securityHeaders(c, next) {
  await next()
  let headers = c.res.headers
  try {
    headers.set('x-content-type-options', 'nosniff')
  } catch {
    // A response passed through from elsewhere may have immutable headers: copy it once.
    c.res = new Response(c.res.body, c.res)
    headers = c.res.headers
  }
  headers.set('x-content-type-options', 'nosniff')
  headers.set('content-security-policy', ADMIN_CSP)
  headers.set('referrer-policy', 'no-referrer')
  headers.set('x-frame-options', 'DENY')
  headers.set('cross-origin-opener-policy', 'same-origin')
  headers.set('cross-origin-resource-policy', 'same-origin')
  if (!headers.has('cache-control')) headers.set('cache-control', 'no-store')
  // The same URLs answer HTML or JSON by Accept: a shared cache must key on it.
  headers.append('vary', 'Accept, Cookie, Authorization')
}

/**
 * Whether the client wants the console's HTML: a browser's Accept names `text/html`. Scripts sending
 * no Accept, `*\/*` or `application/json` get the JSON API exactly as before the console existed.
 */
function wantsHtml(c: AdminContext): boolean {
  return (c.req.header('accept') ?? '').includes('text/html')
}

/** Where to go after login: an admin path on this origin only (never `//evil` or a full URL). */
function safeNext(next: string | undefined): string {
  // Printable ASCII without spaces or backslashes: nothing a browser could read as another host, and
  // nothing that breaks the Location header.
  return next && /^\/admin(\/[\x21-\x5b\x5d-\x7e]*)?$/.test(next) ? next : '/admin/'
}

/** Renders an HTML page; every canary-shaped token on it is redacted, whatever field it came from. */
async function page(c: AdminContext, body: Html, status: 200 | 401 | 404 | 409 | 429 = 200) {
  return c.html(redactCanaries(await body), status)
}

/** A console page: its title, the section the menu marks, its body. */
function consolePage(
  c: AdminContext,
  { title, section, body }: { title: string; section: 'overview' | 'incidents'; body: Html },
  status: 200 | 404 | 409 = 200,
) {
  const auth = c.var.adminAuth
  const csrf = auth?.kind === 'session' ? auth.session.csrf : undefined
  return page(c, layout({ title, section, ...(csrf ? { csrf } : {}), body }), status)
}

function notFoundBody(): Html {
  return html`<section class="card"><p class="empty">No such incident: it may have passed the retention period. <a href="/admin/incidents">All incidents</a></p></section>`
}

function forbidden(c: AdminContext): Response {
  return c.json(
    refusalBody('forbidden', 'Cross-site or unverified request: reload the page and try again.'),
    403,
  )
}

/**
 * The Worker's verdict samples (D1, src/worker/telemetry/worker-telemetry.ts). A misconfigured sampler must not take
 * the console down with it: the overview then plots only the quarantine store's incidents.
 */
function defaultTelemetry(env: Env): TelemetryReader | undefined {
  try {
    return telemetryFor(env)
  } catch {
    return undefined
  }
}

/** The model's bound from its resolved profile, or undefined for a model without one. */
function profileRate(env: Env, model: string): number | undefined {
  try {
    return guardFor(env).profile(model).maxPrefillTokensPerSecond
  } catch {
    return undefined
  }
}

/** The model's pool and window from its resolved profile, or undefined for a model without one. */
function profileFigures(env: Env, model: string): ProfileFigures | undefined {
  try {
    const { kvPoolTokens, contextWindow } = guardFor(env).profile(model)
    return { kvPoolTokens, contextWindow }
  } catch {
    return undefined
  }
}

/** Learned margins per script class and timing buckets: what the guard charges beyond the table. */
async function calibrationReport(env: Env): Promise<Record<string, CalibrationReport>> {
  const store = guardFor(env).calibration as Partial<Pick<DurableCalibration, 'report'>>
  return typeof store.report === 'function' ? await store.report() : {}
}
