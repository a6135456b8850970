/**
 * @module The first delivered byte of a released stream, as a value settled once: the verdict log puts
 * it next to the upstream's first token (what the guard held back is the difference).
 */

/**
 * When a released stream's first byte reached the client: settled once (a time, or undefined when no
 * byte ever did), reported to a listener that may subscribe before or after.
 *
 * @example
 * const first = new FirstByte()
 * first.listen((ms) => log({ firstByteMs: ms }))
 * first.settle(12)
 */
export class FirstByte {
  #settled = false
  #ms: number | undefined
  #listener: ((ms: number | undefined) => void) | undefined

  settle(ms: number | undefined): void {
    if (this.#settled) return
    this.#settled = true
    this.#ms = ms
    this.#listener?.(ms)
  }

  listen(listener: (ms: number | undefined) => void): void {
    if (this.#settled) listener(this.#ms)
    else this.#listener = listener
  }
}
