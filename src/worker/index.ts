interface Env {
  AI: { run(model: string, inputs: Record<string, unknown>): Promise<unknown> }
}
export default {
  async fetch(_req: Request, env: Env): Promise<Response> {
    return Response.json(await env.AI.run('m', { a: 1 }))
  },
} satisfies ExportedHandler<Env>
