/**
 * @module A plain proxy Worker for the peer benchmark: forwards each request to the simulator's HTTP
 * endpoint and streams its answer back untouched. No checks at all — the floor any Worker in front of
 * the simulator pays in workerd (one more HTTP hop and an isolate), next to which the guard Worker's
 * figures are read.
 */

interface ProxyVars {
  SIM_URL: string
}

export default {
  async fetch(request, vars) {
    const url = new URL(request.url)
    const upstream = await fetch(`${vars.SIM_URL}${url.pathname}${url.search}`, {
      method: request.method,
      headers: { 'content-type': 'application/json', authorization: 'Bearer worker' },
      ...(request.method === 'GET' ? {} : { body: await request.text() }),
    })
    return new Response(upstream.body, { status: upstream.status, headers: upstream.headers })
  },
} satisfies ExportedHandler<ProxyVars>
