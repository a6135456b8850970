/** @module sim/README.md: the simulator in-process, as the tests drive it. */
// #region sim-engine
import { SimEngine } from './sim/engine'

const engine = new SimEngine({ poolTokens: 4096, prefillTokensPerSecond: Infinity })
const ai = engine.binding('tenant-a') // { run(model, inputs, options?) }, an AiRunner
await ai.run('@cf/zai-org/glm-5.3', { messages: [{ role: 'user', content: 'hi' }], stream: true })
engine.configure({ mode: 'fixed', tokenizer: 'llama3' })
engine.reset()
engine.stats()
await engine.countTokens(inputs) // the configured tokenizer over the template: usage.prompt_tokens when served whole
// #endregion
