/**
 * @module `env.AI` for a guard under a process-wide V8 heap cap: `run()` goes over HTTP to a simulator
 * that runs in Node, outside workerd. The simulator tokenizes every prompt again (~95 MB of heap for one
 * maximal Chinese prompt); inside the capped process it would be the isolate that dies. Workers AI runs
 * elsewhere, and only the guard's isolate is under test.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'

/** `env.AI` for the guard: the simulator's OpenAI-compatible route, in the binding's output shapes. */
export class HttpAi extends WorkerEntrypoint<{ SIM_HTTP: Fetcher }> {
  async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    const response = await this.env.SIM_HTTP.fetch('http://sim/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, ...inputs }),
    })
    if (!response.ok)
      throw new Error(`AiError: simulator ${response.status}: ${await response.text()}`)
    return inputs.stream === true ? response.body : await response.json()
  }
}

export default {
  fetch: () => new Response('Not found', { status: 404 }),
}
