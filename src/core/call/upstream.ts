/**
 * @module The shapes the guard exchanges with the Workers AI binding (or anything shaped like it).
 *
 * Only the fields the guard reads are typed; everything else passes through untouched.
 */

/**
 * Anything shaped like the Workers AI binding's `run()`; `env.AI` satisfies it.
 *
 * @example
 * const upstream: AiRunner = env.AI
 * const out = await upstream.run('@cf/zai-org/glm-5.3', { messages: [{ role: 'user', content: 'hi' }] })
 */
export interface AiRunner {
  run(
    model: string,
    inputs: Record<string, unknown>,
    options?: Record<string, unknown>,
  ): Promise<unknown>
}

/** A text part of a multimodal message (`{ type: 'text', text }`); other part types are kept opaque. */
export interface ContentPart {
  type: string
  text?: string
  [key: string]: unknown
}

/** One chat message as Workers AI and OpenAI accept it. */
export interface ChatMessage {
  role: string
  content?: string | ContentPart[] | null
  [key: string]: unknown
}
