/**
 * @module Verdict samples and counters for the console and /admin/metrics (issue 18: being built).
 */
import type { VerdictContext, VerdictLog } from '../guard/options'
import type { Env } from './env'

/** Records one verdict in the background. */
export function recordVerdict(_env: Env, _event: VerdictLog, _context: VerdictContext): void {}
