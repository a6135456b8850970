/**
 * @module The secrets plug-in's face: the `secrets` option group resolved once per guard, the prompt
 * hook that puts stand-ins in a request's place (../plan/prompt-secrets.ts), and the checks of its
 * answers — a whole answer's stand-ins restored (../verify/stand-in-evidence.ts), a stream's judged as
 * it is released (../verify/stand-in-check.ts).
 */

import type { PromptSecrets, SecretsOptions, SecretsPlugin } from '../../core'
import { resolveSecrets } from './policy'
import { type SecretServices, type SubstitutedSecrets, substituteSecrets } from './prompt-secrets'
import { StandInCheck, type StreamSecrets } from './stand-in-check'
import { importStandInKey, type StandInKey } from './stand-in-codec'
import { standInEvidence } from './stand-in-evidence'

/**
 * Secrets in prompts: off unless the `secrets` option sets a policy.
 *
 * @example
 * new Guard(options, { secrets: secretsPlugin })
 */
export const secretsPlugin: SecretsPlugin = {
  create(options, host) {
    const resolved = resolveSecrets(options as SecretsOptions | undefined)
    if (!resolved) return undefined
    let key: Promise<StandInKey> | undefined
    // The stand-in key: the guard's secret, its own derivations, imported once on first use.
    const services: SecretServices = {
      secrets: resolved,
      standInKey: () => {
        key ??= importStandInKey(host.secret)
        return key
      },
    }
    return {
      async substitute(request, inputs, memo) {
        const done = await substituteSecrets(services, request, inputs, memo)
        return { inputs: done.inputs, secrets: done.secrets && promptSecrets(done.secrets) }
      },
    }
  },
}

/** What the core carries of a request's secrets: its counts and the checks of its answers. */
function promptSecrets(secrets: SubstitutedSecrets): PromptSecrets {
  return {
    substituted: secrets.substituted,
    detected: secrets.detected,
    redact: (text) => secrets.book.redact(text),
    restore: (texts, jsonContent) => standInEvidence(secrets, texts, jsonContent),
    check(view, options) {
      const stream: StreamSecrets = {
        book: secrets.book,
        jsonContent: options.jsonContent,
        inPrompt: secrets.inPrompt,
        onForeign: options.onForeign,
      }
      return new StandInCheck(stream, view)
    },
  }
}
