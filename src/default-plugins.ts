/**
 * @module The evidence plug-ins the default entry registers: foreign content (another tenant's prompt
 * text in an answer, with its public background texts) and secrets (stand-ins in prompts).
 */

import type { EvidencePlugins } from './core'
import { foreignContentPlugin } from './plugins/foreign-content'
import { secretsPlugin } from './plugins/secrets'

/**
 * Both evidence plug-ins: the default entry's guards (and the Worker's) have every check.
 *
 * @example
 * const guard = new Guard(options, DEFAULT_PLUGINS)
 */
export const DEFAULT_PLUGINS: Readonly<EvidencePlugins> = Object.freeze({
  content: foreignContentPlugin,
  secrets: secretsPlugin,
})
