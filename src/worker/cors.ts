/**
 * @module CORS for a browser app in front of the Worker: an operator's allow-list of origins
 * (`GUARD_CORS_ORIGINS`), never `*`. A preflight is answered before the tenant's key is asked for (a
 * browser sends none with it); the request that follows is authenticated as any other.
 */
import type { MiddlewareHandler } from 'hono'

/** What a browser app needs: its key and JSON in, the guard's ids out. */
const ALLOW_HEADERS = 'authorization, content-type'
const EXPOSE_HEADERS = 'x-guard-request-id, x-guard-incident-id, x-should-retry, retry-after'
const MAX_AGE_S = '600'

/**
 * The origins `GUARD_CORS_ORIGINS` allows: a comma-separated list of exact origins
 * (`https://app.example.com`). An entry that is no origin — `*`, a path, a wildcard host — allows
 * nothing and is reported, so a typo never opens the Worker to every site.
 *
 * @example
 * allowedOrigins('https://app.example.com, http://localhost:5173') // Set of the two
 */
function allowedOrigins(value: string | undefined): {
  origins: ReadonlySet<string>
  rejected: string[]
} {
  const origins = new Set<string>()
  const rejected: string[] = []
  for (const entry of (value ?? '').split(',').map((e) => e.trim())) {
    if (entry === '') continue
    if (isOrigin(entry)) origins.add(entry)
    else rejected.push(entry)
  }
  return { origins, rejected }
}

/** Whether `entry` is exactly an http(s) origin: scheme, host and port, nothing else, no wildcard. */
function isOrigin(entry: string): boolean {
  if (entry.includes('*')) return false
  try {
    const url = new URL(entry)
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === entry
  } catch {
    return false
  }
}

/** Parsed once per distinct value (the variable is fixed per deployment). */
let cached: { value: string | undefined; origins: ReadonlySet<string> } | undefined

function originsOf(value: string | undefined): ReadonlySet<string> {
  if (cached && cached.value === value) return cached.origins
  const { origins, rejected } = allowedOrigins(value)
  if (rejected.length > 0) {
    console.error(
      JSON.stringify({
        event: 'ai_guard_config',
        variable: 'GUARD_CORS_ORIGINS',
        ignored: rejected.map((r) => r.slice(0, 100)),
        why: 'not an exact http(s) origin; `*` is never allowed',
      }),
    )
  }
  cached = { value, origins }
  return origins
}

/**
 * Middleware for the model routes: answers a preflight (204; the CORS headers only for an allowed
 * origin), and adds the headers to the response of a request from an allowed origin.
 *
 * @example
 * app.use('/v1/*', cors((c) => c.env.GUARD_CORS_ORIGINS))
 */
export function cors<E extends { Bindings: object }>(
  setting: (env: E['Bindings']) => string | undefined,
): MiddlewareHandler<E> {
  return async function corsHeaders(c, next) {
    const origin = c.req.header('origin')
    const allowed = origin !== undefined && originsOf(setting(c.env)).has(origin)
    if (c.req.method === 'OPTIONS') {
      const headers: Record<string, string> = { vary: 'Origin' }
      if (allowed) {
        headers['access-control-allow-origin'] = origin
        headers['access-control-allow-methods'] = 'GET, POST, OPTIONS'
        headers['access-control-allow-headers'] = ALLOW_HEADERS
        headers['access-control-max-age'] = MAX_AGE_S
      }
      return new Response(null, { status: 204, headers })
    }
    await next()
    c.res.headers.append('vary', 'Origin')
    if (allowed) {
      c.res.headers.set('access-control-allow-origin', origin)
      c.res.headers.set('access-control-expose-headers', EXPOSE_HEADERS)
    }
  }
}
