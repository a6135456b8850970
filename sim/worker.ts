/**
 * @module The simulator as a Worker: `SimulatedAi` is the `env.AI` stand-in (RPC), the default export
 * serves OpenAI-compatible HTTP. One module-level engine, so every caller shares one KV pool — which is
 * exactly what lets one tenant's prompt reach another's answer.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'
import { type SimConfig, SimEngine, type SimResult, type SimStats, sessionAffinity } from './engine'
import { simFetchHandler } from './http'

export type { SimConfig, SimMode } from './config'
export type { SimStats } from './engine'

const engine = new SimEngine()
const handle = simFetchHandler(engine)

/** Who a binding call belongs to: a service binding may pass `props: { account }`. */
interface SimProps {
  account?: string
}

/**
 * The Workers AI binding stand-in, reached over a service binding (`entrypoint = "SimulatedAi"`).
 *
 * @example
 * const out = await env.AI.run('@cf/zai-org/glm-5.3', { messages }, {})
 * await (env.AI as unknown as SimControl).configure({ mode: 'fixed' })
 */
export class SimulatedAi extends WorkerEntrypoint<unknown, SimProps> {
  /**
   * The binding's `run()`; the account is `props.account` when the binding sets it, else 'worker'.
   * `options.extraHeaders['x-session-affinity']` is recorded as the request's `affinity`.
   */
  async run(
    model: string,
    inputs: Record<string, unknown>,
    options?: Record<string, unknown>,
  ): Promise<SimResult> {
    const props = this.ctx.props as SimProps | undefined
    const account = typeof props?.account === 'string' ? props.account : 'worker'
    return engine.request({ model, inputs, account, affinity: sessionAffinity(options) })
  }

  /** Changes settings at runtime (a new pool or page size empties the pool). */
  configure(partial: Partial<SimConfig>): SimConfig {
    return engine.configure(partial)
  }

  /** Constructor defaults (plus `config`), an empty pool, zeroed counters. */
  reset(config?: Partial<SimConfig>): SimConfig {
    return engine.reset(config)
  }

  /** Pool figures, counters by mode and outcome, recent requests. */
  stats(): SimStats {
    return engine.stats()
  }
}

/**
 * The RPC surface tests and tools see through a service binding to {@link SimulatedAi}.
 *
 * @example
 * const ai = env.AI as unknown as SimControl
 * await ai.reset({ poolTokens: 4096 })
 */
export interface SimControl {
  run(
    model: string,
    inputs: Record<string, unknown>,
    options?: Record<string, unknown>,
  ): Promise<unknown>
  configure(partial: Partial<SimConfig>): Promise<SimConfig>
  reset(config?: Partial<SimConfig>): Promise<SimConfig>
  stats(): Promise<SimStats>
}

export default {
  fetch(request: Request): Promise<Response> {
    return handle(request)
  },
} satisfies ExportedHandler
