/**
 * @module Heartbeats while a stream is held for its verdict (`stream.heartbeatMs`): an SSE comment every so
 * often, so proxies and clients with idle timeouts keep the connection, then the released answer.
 *
 * The cost, stated where it is paid: the response exists before the verdict, so its status is 200;
 * an answer withheld after that ends the stream with the guard's error instead of an error status.
 * So the beating response starts only once a verdict has taken `heartbeatMs` ({@link heldPast}): a
 * verdict that comes sooner keeps its own status (a quarantine's 422, which no client library
 * resends).
 */

/** The comment sent while held: SSE clients ignore comment lines. */
const BEAT = ': held\n\n'

/**
 * Whether `pending` is still unsettled after `ms`: resolves `true` then, `false` as soon as it settles
 * (fulfilled or not; its outcome is the caller's to read).
 *
 * @example
 * if (!(await heldPast(running, 15_000))) return await running
 */
export function heldPast(pending: Promise<unknown>, ms: number): Promise<boolean> {
  const tick = beatAfter(ms)
  const settled = pending.then(
    () => false,
    () => false,
  )
  return Promise.race([settled, tick.beat.then(() => true)]).finally(tick.stop)
}

/**
 * A stream that beats every `everyMs` until `pending` settles, then carries the released stream (or
 * errors with the reason it was withheld). `beatFirst`: the first beat goes at once (the stream starts
 * after a silence of `everyMs` already: {@link heldPast}). A client that goes away cancels the answer too.
 *
 * @example
 * return new Response(heartbeatStream(runAttempts(…), 15_000), { headers: SSE_HEADERS })
 */
export function heartbeatStream(
  pending: Promise<ReadableStream<Uint8Array>>,
  everyMs: number,
  beatFirst = false,
): ReadableStream<Uint8Array> {
  const beat = new TextEncoder().encode(BEAT)
  // Settled once: the answer's reader, or the error that withheld it.
  const answer = pending.then(
    (stream) => ({ reader: stream.getReader() }),
    (error: unknown) => ({ error }),
  )
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  return new ReadableStream<Uint8Array>({
    start(controller) {
      // Queued with the response itself: no timer of its own to come late behind the answer's.
      if (beatFirst) controller.enqueue(beat)
    },
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
