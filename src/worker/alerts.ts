/**
 * @module Leak alerts: webhooks on foreign-canary and foreign-content incidents (issue 18: being built).
 */
import type { VerdictContext, VerdictLog } from '../guard/options'
import type { Env } from './env'

/** Sends the alerts a verdict calls for, in the background. */
export function alertOnVerdict(_env: Env, _event: VerdictLog, _context: VerdictContext): void {}
