/**
 * @module Adapters between the guard and the ecosystem: self-hosted OpenAI-compatible engines as an
 * upstream, and a guarded runner typed as the Workers AI binding for libraries that take `env.AI`.
 */
export { type OpenAiHttpOptions, openAiHttpUpstream } from './openai-http'
export { asAiBinding } from './workers-ai-binding'
