/**
 * @module The three ways in — `createGuard`, `guardAi`, the Hono middleware `aiGuard` — for guards
 * built with one set of evidence plug-ins: each package entry exports the surface of its own set.
 */
import type { MiddlewareHandler } from 'hono'
import type { AiRunner } from '../call/upstream'
import type { EvidencePlugins } from '../vocabulary/evidence-plugins'
import type { GuardOptions } from '../vocabulary/options'
import { type AiGuard, createGuard, guardAi } from './guard-ai'
import { type AiGuardOptions, aiGuard } from './middleware'

/** The public surface of guards built with one set of plug-ins (see ./guard-ai.ts, ./middleware.ts). */
export interface GuardSurface {
  /**
   * Creates a guard. Do it once per isolate — at module scope — so every request shares its state.
   * Options are validated here: a plain `Error` names the bad option.
   *
   * @example
   * const guard = createGuard({ secret: env.GUARD_SECRET })
   * const ai = guard.wrap(env.AI, { tenant: await verifiedUser(request), waitUntil: (p) => ctx.waitUntil(p) })
   */
  createGuard(options: GuardOptions): AiGuard
  /**
   * Wraps a Workers AI binding with the guard; called again with equal options (the tenant aside) it
   * reuses the isolate's guard.
   *
   * @example
   * const ai = guardAi(env.AI, { secret: env.GUARD_SECRET, tenant: user.id })
   */
  guardAi(upstream: AiRunner, options: GuardOptions): AiRunner
  /**
   * Hono middleware: a guarded runner on `c.var.ai`; a `GuardError` thrown by a handler becomes its
   * OpenAI-style response.
   *
   * @example
   * app.use('/chat/*', aiGuard({ secret: SECRET, tenant: (c) => c.var.userId }))
   */
  aiGuard(options: AiGuardOptions): MiddlewareHandler
}

/**
 * The surface whose guards have `plugins` (and refuse the options of any other).
 *
 * @example
 * export const { createGuard, guardAi, aiGuard } = guardSurface(DEFAULT_PLUGINS)
 */
export function guardSurface(plugins: EvidencePlugins): GuardSurface {
  return {
    createGuard: (options) => createGuard(options, plugins),
    guardAi: (upstream, options) => guardAi(upstream, options, plugins),
    aiGuard: (options) => aiGuard(options, plugins),
  }
}
