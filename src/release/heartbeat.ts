/**
 * @module Heartbeats while a stream is held for its verdict (`heartbeatMs`): an SSE comment every so
 * often, so proxies and clients with idle timeouts keep the connection, then the released answer.
 *
 * The cost, stated where it is paid: the response exists before the verdict, so its status is 200;
 * an answer withheld after that ends the stream with the guard's error instead of an error status.
 */

/** The comment sent while held: SSE clients ignore comment lines. */
const BEAT = ': held\n\n'

/**
 * A stream that beats every `everyMs` until `pending` settles, then carries the released stream (or
 * errors with the reason it was withheld). A client that goes away cancels the answer too.
 *
 * @example
 * return new Response(heartbeatStream(runAttempts(…), 15_000), { headers: SSE_HEADERS })
 */
export function heartbeatStream(
  pending: Promise<ReadableStream<Uint8Array>>,
  everyMs: number,
): ReadableStream<Uint8Array> {
  const beat = new TextEncoder().encode(BEAT)
  // Settled once: the answer's reader, or the error that withheld it.
  const answer = pending.then(
    (stream) => ({ reader: stream.getReader() }),
    (error: unknown) => ({ error }),
  )
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (reader === undefined) {
        const tick = beatAfter(everyMs)
        const next = await Promise.race([answer, tick.beat])
        tick.stop()
        if (next === 'beat') {
          controller.enqueue(beat)
          return
        }
        if ('error' in next) throw next.error
        reader = next.reader
      }
      const { done, value } = await reader.read()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    async cancel(reason) {
      const settled = await answer
      if ('reader' in settled) await settled.reader.cancel(reason)
    },
  })
}

/** A promise of the next beat, and how to drop it once the answer came first. */
function beatAfter(ms: number): { beat: Promise<'beat'>; stop: () => void } {
  let stop = () => {}
  const beat = new Promise<'beat'>((resolve) => {
    const timer = setTimeout(() => resolve('beat'), ms)
    stop = () => clearTimeout(timer)
  })
  return { beat, stop }
}
