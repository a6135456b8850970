/**
 * @module The Worker's model surface: `GET /v1/models` lists what it guards, and an unknown model's
 * refusal names the setting a Worker operator has (`GUARD_MODELS`), not the library's option.
 */
import { GuardError } from '../errors'
import type { AiGuard } from '../surfaces/guard-ai'

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

/** The figures a profile of a model with no built-in one must give (src/vocabulary/options.ts). */
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
 * Refuses a model the guard has no profile for, before any work, with a message for a Worker
 * operator: the library's wording points at the `models` option, which a Worker user never sees.
 *
 * @example
 * requireProfile(guardFor(c.env), model)
 */
export function requireProfile(guard: AiGuard, model: string): void {
  try {
    guard.profile(model)
  } catch (error) {
    if (!(error instanceof GuardError) || error.param !== 'model') throw error
    throw new GuardError(
      'invalid_request',
      `Model ${JSON.stringify(model)} has no profile, so no safe token ceiling is known; add one to the Worker's GUARD_MODELS variable, a JSON object {${JSON.stringify(model)}: {${PROFILE_FIELDS}}}. GET /v1/models lists the models guarded now.`,
      { param: 'model', cause: error },
    )
  }
}
