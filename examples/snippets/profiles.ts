/** @module docs/ecosystem.md, "Configure profiles" (test/guard/options.test.ts and the ceiling tests). */
// #region profiles
import { createGuard } from 'workers-ai-guard'

const guard = createGuard({
  secret: env.GUARD_SECRET,
  models: {
    // Partial overrides merge into a built-in profile…
    '@cf/zai-org/glm-5.3': { kvPoolTokens: 640_000 },
    // …a model without one needs every figure: there is no safe default for a pool size.
    'my-org/long-model': {
      contextWindow: 262_144,
      kvPoolTokens: 180_000,
      maxPrefillTokensPerSecond: 80_000,
      tokenizerDrift: 0.15,
      defaultOutputReserve: 2_048,
      echo: 'require',
    },
  },
})

// #endregion
export { guard }
