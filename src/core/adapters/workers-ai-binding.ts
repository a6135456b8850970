/**
 * @module A guarded runner typed as the Workers AI binding (`Ai`), for libraries that take `env.AI`
 * itself, such as `workers-ai-provider`'s `createWorkersAI({ binding })`.
 */
import type { AiRunner } from '../call/upstream'

/**
 * The binding members other than `run()`. Each reaches a model without the guard (a gateway, search,
 * conversions), so each throws instead of quietly bypassing the three guards.
 */
const UNGUARDED = ['gateway', 'websearch', 'aiSearch', 'autorag', 'models', 'toMarkdown'] as const

/**
 * `runner` (usually `guardAi(env.AI, …)`) as an `Ai` binding: `run()` is the guarded one; every other
 * member of the binding throws, naming itself, because it would bypass the guard. The AI SDK provider
 * only calls `run()` for chat models, so `generateText` and `streamText` work unchanged.
 *
 * @example
 * import { createWorkersAI } from 'workers-ai-provider'
 * const workersai = createWorkersAI({
 *   binding: asAiBinding(guardAi(env.AI, { secret: env.GUARD_SECRET, tenant: user.id })),
 * })
 * const { text } = await generateText({ model: workersai('@cf/zai-org/glm-5.3'), prompt })
 */
export function asAiBinding(runner: AiRunner): Ai {
  if (!runner || typeof runner.run !== 'function') {
    throw new Error('asAiBinding needs a runner with a run(model, inputs, options) method')
  }
  const binding: Record<string, unknown> = {
    aiGatewayLogId: null,
    run: (model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>) =>
      runner.run(model, inputs, options),
  }
  for (const name of UNGUARDED) {
    binding[name] = () => {
      throw new Error(
        `The guarded binding does not offer ${name}(): it would reach a model without the guard. Use run().`,
      )
    }
  }
  return binding as unknown as Ai
}
