/**
 * @module The Worker's model surface: `GET /v1/models` lists what it guards, and an unknown model is
 * OpenAI's 404 for the tenant, with the setting a Worker operator has (`GUARD_MODELS`) in the log.
 */

import type { AiGuard } from '../core'
import { GuardError } from '../core'
import { refusalBody } from './openai'

/** One entry of OpenAI's `GET /v1/models` list. */
interface ModelEntry {
  id: string
  object: 'model'
  /** Unix seconds; the guard knows no creation date of a model, so 0, as OpenAI-compatible servers send. */
  created: number
  owned_by: string
}

/**
 * The models the Worker guards (the built-in profiles and those `GUARD_MODELS` adds), in OpenAI's list
 * shape: chat front-ends and the `openai` client's `models.list()` ask for it before anything else.
 *
 * @example
 * return c.json(modelList(guardFor(c.env)))
 */
export function modelList(guard: AiGuard): { object: 'list'; data: ModelEntry[] } {
  const data = guard
    .models()
    .map((id): ModelEntry => ({ id, object: 'model', created: 0, owned_by: ownerOf(id) }))
  return { object: 'list', data }
}

/** The author of a catalogue name (`@cf/zai-org/glm-5.3` → `zai-org`), else Workers AI. */
function ownerOf(model: string): string {
  return /^@(?:cf|hf)\/([^/]+)\//.exec(model)?.[1] ?? 'workers-ai'
}

/** The figures a profile of a model with no built-in one must give (src/core/vocabulary/options.ts). */
const PROFILE_FIELDS = [
  'contextWindow',
  'kvPoolTokens',
  'maxPrefillTokensPerSecond',
  'tokenizerDrift',
  'defaultOutputReserve',
]
  .map((field) => `"${field}": …`)
  .join(', ')

/**
 * A model the guard has no profile for, refused before any work: the tenant gets OpenAI's 404
 * `model_not_found` (what its client expects, nothing it cannot act on); the operator's remedy, a
 * `GUARD_MODELS` entry, goes to the log. Undefined for a model the guard serves.
 *
 * @example
 * const refused = unknownModel(guardFor(c.env), model)
 * if (refused) return refused
 */
export function unknownModel(guard: AiGuard, model: string): Response | undefined {
  try {
    guard.profile(model)
    return undefined
  } catch (error) {
    if (!(error instanceof GuardError) || error.param !== 'model') throw error
  }
  console.warn(
    JSON.stringify({
      event: 'ai_guard_unknown_model',
      model,
      hint: `No profile, so no safe token ceiling is known: to serve it, add it to the Worker's GUARD_MODELS variable, a JSON object {${JSON.stringify(model)}: {${PROFILE_FIELDS}}}.`,
    }),
  )
  const message = `The model ${JSON.stringify(model)} does not exist or is not served here; GET /v1/models lists the models you can use.`
  return Response.json(refusalBody('model_not_found', message, 'model'), { status: 404 })
}
