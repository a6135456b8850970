import o200k from 'gpt-tokenizer/encoding/o200k_base'

/** gpt-tokenizer's own merge cache size until something configures it (its DEFAULT_MERGE_CACHE_SIZE). */
const LIBRARY_DEFAULT = 100_000

/**
 * Whether the ceiling's tokenizer has been loaded in this isolate, read from outside: loading it
 * (src/core/ceiling/count.ts, on the first count) sets gpt-tokenizer's merge cache to 10,000 entries,
 * down from the library's 100,000. Importing the library here builds its vocabulary but configures
 * nothing, so the figure changes only when the guard's own load runs.
 *
 * @example
 * await decideCeiling(small, 677_184, margins)
 * tokenizerLoaded() // false: decided on bytes
 */
export function tokenizerLoaded(): boolean {
  const core: unknown = Reflect.get(o200k, 'bytePairEncodingCoreProcessor')
  const size: unknown = Reflect.get(core as object, 'mergeCacheSize')
  if (size !== LIBRARY_DEFAULT && size !== 10_000) {
    throw new Error(
      `gpt-tokenizer's merge cache size is ${String(size)}: update test/ceiling/loaded.ts`,
    )
  }
  return size === 10_000
}
