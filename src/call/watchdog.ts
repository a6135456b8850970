/**
 * @module A stall watchdog for upstream byte streams: a hung upstream becomes a clear error, not a hang.
 */
import { GuardError } from '../errors'

/** Time limits of one upstream stream, ms. */
export interface StallLimits {
  /** From the upstream call until its first byte. */
  firstByteMs: number
  /** Between two chunks once bytes flow. */
  idleMs: number
}

/**
 * Passes bytes through unchanged and errors the stream (cancelling the upstream) when the first byte or
 * the next one takes longer than its limit. Real timers: these are deadlines, not measurements.
 *
 * @example
 * body.pipeThrough(stallWatchdog({ firstByteMs: 120_000, idleMs: 60_000 }))
 */
export function stallWatchdog(limits: StallLimits): TransformStream<Uint8Array, Uint8Array> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let seen = false
  const clear = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
  }
  const arm = (controller: TransformStreamDefaultController<Uint8Array>) => {
    clear()
    const ms = seen ? limits.idleMs : limits.firstByteMs
    timer = setTimeout(() => {
      timer = undefined
      const what = seen
        ? `sent nothing for ${ms} ms mid-answer`
        : `sent no first byte within ${ms} ms`
      try {
        controller.error(
          new GuardError('upstream_error', `The upstream ${what}; the request was abandoned.`, {
            status: 504,
          }),
        )
      } catch {
        // Already closed or errored: nothing left to stop.
      }
    }, ms)
  }
  return new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      arm(controller)
    },
    transform(chunk, controller) {
      seen = true
      arm(controller)
      controller.enqueue(chunk)
    },
    flush() {
      clear()
    },
    cancel() {
      clear()
    },
  })
}

/**
 * Rejects with a 504 `upstream_error` if `promise` does not settle within `ms`. A value that arrives
 * after the deadline is handed to `late` (e.g. to cancel a stream nobody will read).
 *
 * @example
 * const out = await deadline(env.AI.run(model, inputs), 600_000, 'an answer')
 */
export async function deadline<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
  late: (value: T) => void = () => {},
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let expired = false
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true
      reject(
        new GuardError('upstream_error', `The upstream did not return ${what} within ${ms} ms.`, {
          status: 504,
        }),
      )
    }, ms)
  })
  promise.then(
    (value) => {
      if (expired) late(value)
    },
    () => {},
  )
  try {
    return await Promise.race([promise, expiry])
  } finally {
    if (timer !== undefined) clearTimeout(timer)
  }
}
