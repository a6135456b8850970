/** @module docs/ecosystem.md, "Self-hosted engines" (test/ecosystem/openai-http.test.ts). */
// #region self-hosted
import { createGuard } from 'workers-ai-guard'
import { openAiHttpUpstream } from 'workers-ai-guard/adapters'

const upstream = openAiHttpUpstream({
  baseUrl: 'http://sglang.internal:30000/v1', // as OpenAI clients take it; /chat/completions is appended
  apiKey: process.env.SGLANG_API_KEY, // optional: Authorization: Bearer …
  headers: { 'x-deployment': 'glm-a' }, // optional, every request
  // fetch: env.SGLANG.fetch.bind(env.SGLANG), // optional: a service binding, a tunnel, a test double
})
const guard = createGuard({
  secret: process.env.GUARD_SECRET!,
  models: {
    'zai-org/GLM-5.3': {
      contextWindow: 1_048_576,
      // SGLang: max_req_input_len = min(context_len - 1, max_total_num_tokens - 1) - 5 — use your
      // server's max_total_num_tokens (logged at start-up), the smallest over every replica.
      kvPoolTokens: 681_280,
      maxPrefillTokensPerSecond: 60_000,
      tokenizerDrift: 0.1,
      defaultOutputReserve: 4_096,
      echo: 'require',
    },
  },
})
const ai = guard.wrap(upstream, { tenant: 'acme' })

// #endregion
export { ai }
