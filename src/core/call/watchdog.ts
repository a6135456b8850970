/**
 * @module A deadline for upstream calls: a hung upstream becomes a clear error, not a hang (streams'
 * stall deadlines live in ./upstream-events.ts).
 */
import { GuardError } from '../errors'

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
