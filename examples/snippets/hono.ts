/** @module docs/ecosystem.md, "In an existing Hono app" (examples/hono-app is the whole app). */
// #region hono
import { aiGuard } from 'workers-ai-guard'

app.use('/chat', aiGuard({ secret, tenant: (c) => c.get('user') }))
// …then c.var.ai.run(model, inputs) where the handler called c.env.AI.run(model, inputs)
// #endregion
