/**
 * @module What the docs' snippets take as given: the request's values, the user your own auth proved,
 * the Worker's bindings. Declared here so each snippet file is exactly the text the docs show.
 */

declare namespace Cloudflare {
  interface Env {
    AI: Ai
    GUARD_SECRET: string
  }
}

/** The Worker's bindings, where a snippet runs inside `fetch(request, env, ctx)`. */
declare const env: Cloudflare.Env
declare const ctx: ExecutionContext
/** Who the request belongs to, as the app's own sign-in proved it. */
declare const user: { id: string }
declare const messages: { role: 'user' | 'assistant' | 'system'; content: string }[]
declare const prompt: string
declare const model: string
/** A request's inputs to `run()` (`{ messages }` or `{ prompt }`). */
declare const inputs: { messages: { role: string; content: string }[] }
declare const TENANT_KEY: string
declare const secret: string
declare const guard: import('workers-ai-guard').AiGuard
declare const app: import('hono').Hono<{ Variables: { user: string } }>
/** Node's, for the snippets that run there (the project has no @types/node). */
declare const process: { env: Record<string, string | undefined> }
