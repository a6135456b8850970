/**
 * @module The client's stream of a released answer: one pull-based stage from the upstream reader to the
 * client, each upstream chunk read, judged and released once, and what one chunk lets out sent as one
 * chunk. Backpressure holds: nothing is read from the upstream until the client asks for more.
 */
import type { UpstreamEvents } from '../call/upstream-events'
import type { Release, Released } from './release-stream'

/** What the client stream reports about its own delivery. */
interface DeliveryHooks {
  /** Called once: `true` as the first byte is handed to the client, `false` if none ever was. */
  onFirstByte?: (sent: boolean) => void
}

/** Whether a byte reached the client, said once through the hook. */
class FirstByte {
  #said = false
  constructor(readonly hook: DeliveryHooks['onFirstByte']) {}

  say(sent: boolean): void {
    if (this.#said) return
    this.#said = true
    this.hook?.(sent)
  }
}

/**
 * The released answer as bytes. An error from the upstream or the release (a quarantine, a truncated
 * upstream) errors the stream after the last byte that was verified; a client that goes away cancels
 * the upstream.
 *
 * @example
 * return new Response(clientStream(upstream, new Release(ctx, start)))
 */
export function clientStream(
  upstream: UpstreamEvents,
  release: Release,
  hooks: DeliveryHooks = {},
): ReadableStream<Uint8Array> {
  let begun = false
  // A stream that ends (closed, errored or cancelled) without a byte says so, once.
  const first = new FirstByte(hooks.onFirstByte)
  /** An end that fails (a truncated upstream) after its last verified bytes were sent. */
  let failure: unknown
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (failure !== undefined) throw failure
      // The held head's text comes in pieces (see `Release.begin`).
      let out: Released | readonly string[] = ''
      let ended = false
      try {
        // Until something may leave or the upstream ends; inline, as a helper costs a promise a pull.
        if (!begun) {
          begun = true
          out = await release.begin()
        }
        while (out.length === 0) {
          const frames = await upstream.next()
          if (frames === undefined) {
            out = await release.finish()
            ended = true
            break
          }
          // Most batches are judged synchronously: an `await` would still cost a turn of the queue.
          const taken = release.take(frames)
          out = taken instanceof Promise ? await taken : taken
        }
        if (ended) release.end()
      } catch (error) {
        await upstream.cancel(error)
        // An error erases what is queued: the verified bytes go first, the error with the next pull.
        if (out.length === 0) {
          first.say(false)
          throw error
        }
        failure = error
      }
      if (out.length > 0) {
        enqueue(controller, out)
        first.say(true)
      }
      if (ended && failure === undefined) {
        first.say(false)
        controller.close()
      }
    },
    cancel(reason) {
      first.say(false)
      // The client went away: stop the upstream too, so nothing is left running.
      return upstream.cancel(reason)
    },
  })
}

const utf8 = new TextEncoder()

/**
 * Released text or bytes as the client's chunks, each in a buffer of its own: a client may take a
 * chunk's buffer over (re-enqueued into a byte stream), which must not empty any other chunk.
 */
function enqueue(
  controller: ReadableStreamDefaultController<Uint8Array>,
  out: Released | readonly string[],
): void {
  if (typeof out === 'string') controller.enqueue(utf8.encode(out))
  else if (out instanceof Uint8Array) controller.enqueue(out)
  else for (const piece of out) controller.enqueue(utf8.encode(piece))
}
