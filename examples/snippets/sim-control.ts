/** @module sim/README.md: steering the simulator Worker over RPC. */
import type { SimControl } from './sim/worker'

// #region sim-control
const ai = env.AI as unknown as SimControl // type from sim/worker.ts
await ai.reset({ poolTokens: 4096 })
await ai.configure({ mode: 'truncate' })
await ai.stats()
// #endregion
