/**
 * @module A plain proxy Worker for the peer benchmark: forwards each request to the simulator's HTTP
 * endpoint and streams its answer back. No checks at all — the floor any Worker in front of the
 * simulator pays in workerd (one more HTTP hop and an isolate), next to which the guard Worker's
 * figures are read. With `READ=js` it does what any Worker that inspects the traffic must, and
 * nothing more: it parses the request body and serialises it again, parses a whole answer and
 * serialises it again, and reads every chunk of a streamed answer in JavaScript and hands it on
 * unchanged (the runtime's own pass-through never enters JavaScript).
 */

interface ProxyVars {
  SIM_URL: string
  READ?: string
}

export default {
  async fetch(request, vars) {
    const url = new URL(request.url)
    const reading = vars.READ === 'js'
    const text = request.method === 'GET' ? undefined : await request.text()
    const body = reading && text !== undefined ? JSON.parse(text) : undefined
    const upstream = await fetch(`${vars.SIM_URL}${url.pathname}${url.search}`, {
      method: request.method,
      headers: { 'content-type': 'application/json', authorization: 'Bearer worker' },
      ...(text === undefined ? {} : { body: body === undefined ? text : JSON.stringify(body) }),
    })
    if (!reading || !upstream.body) {
      return new Response(upstream.body, { status: upstream.status, headers: upstream.headers })
    }
    if (body?.stream === true) {
      return new Response(readInJs(upstream.body), {
        status: upstream.status,
        headers: upstream.headers,
      })
    }
    return Response.json(await upstream.json(), { status: upstream.status })
  },
} satisfies ExportedHandler<ProxyVars>

/** The same bytes, each chunk read by JavaScript and enqueued again (one read per client pull). */
function readInJs(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await reader.read()
      if (next.done) controller.close()
      else controller.enqueue(next.value)
    },
    cancel: (reason) => reader.cancel(reason),
  })
}
