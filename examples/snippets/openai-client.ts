/** @module docs/ecosystem.md, "With the official openai client" (test/ecosystem/openai-client.test.ts). */
// #region openai-client
import OpenAI from 'openai'

const client = new OpenAI({ baseURL: 'https://guard.example.workers.dev/v1', apiKey: TENANT_KEY })
try {
  const res = await client.chat.completions.create({ model: '@cf/zai-org/glm-5.3', messages })
  console.log(res.choices[0]?.message.content)
} catch (e) {
  if (e instanceof OpenAI.APIError && e.code === 'response_quarantined') {
    const incident = (e.error as { incident_id?: string }).incident_id // also header x-guard-incident-id
    console.warn(`answer withheld: ${incident}`)
  }
}
// #endregion
