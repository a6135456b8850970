/** @module docs/ecosystem.md, "In a Worker, as a drop-in binding". */
// #region drop-in
import { env } from 'cloudflare:workers'
import { createGuard } from 'workers-ai-guard'

const guard = createGuard({ secret: env.GUARD_SECRET }) // once per isolate, at module scope

// Per request: `user` is who your own auth proved (a verified key or session), never a client's header.
const ai = guard.wrap(env.AI, { tenant: user.id, waitUntil: (p) => ctx.waitUntil(p) })
const answer = await ai.run('@cf/zai-org/glm-5.3', { messages, stream: true })

// #endregion
export { answer }
