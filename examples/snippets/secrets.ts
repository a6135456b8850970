/** @module README and docs/secrets.md, "Keep secrets out of the engine" (test/guard/secrets-*.test.ts). */
import { guardAi } from 'workers-ai-guard'

// #region secrets-readme
const ai = guardAi(env.AI, {
  secret: env.GUARD_SECRET,
  secrets: { high: 'substitute', medium: 'detect', kinds: { 'us-ssn': 'substitute' } },
})
// #endregion

// #region secrets-options
guardAi(env.AI, {
  secret: env.GUARD_SECRET,
  secrets: {
    high: 'substitute', // every kind a checksum or a published format confirms
    medium: 'detect', // SSNs, keyword-gated AWS secret keys and Cloudflare tokens, operator patterns
    kinds: { 'us-ssn': 'substitute' }, // one kind's own policy wins
    patterns: [{ name: 'acme-account', pattern: 'ACME-[0-9]{8}', confidence: 'high' }],
    models: { '@cf/meta/llama-3.1-8b-instruct': { high: 'detect' } }, // per model, over the above
  },
})

// #endregion

export { ai }
