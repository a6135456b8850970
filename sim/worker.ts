import { WorkerEntrypoint } from 'cloudflare:workers'

export class SimulatedAi extends WorkerEntrypoint {
  async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    return { model, echo: inputs }
  }
}

export default {
  async fetch(): Promise<Response> {
    return new Response('sim')
  },
}
