/** @module docs/ecosystem.md, "With the Vercel AI SDK" (test/ecosystem/ai-sdk.test.ts). */
// #region ai-sdk
import { generateText } from 'ai'
import { asAiBinding } from 'workers-ai-guard/adapters'
import { createWorkersAI } from 'workers-ai-provider'

const workersai = createWorkersAI({ binding: asAiBinding(guard.wrap(env.AI, { tenant: user.id })) })
const { text } = await generateText({ model: workersai('@cf/zai-org/glm-5.3'), prompt })

// #endregion
export { text }
