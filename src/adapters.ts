/**
 * @module workers-ai-guard/adapters: self-hosted OpenAI-compatible engines as the guard's upstream,
 * and a guarded runner typed as the Workers AI binding for libraries that take `env.AI`.
 */
export { asAiBinding, type OpenAiHttpOptions, openAiHttpUpstream } from './core'
