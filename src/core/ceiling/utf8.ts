/**
 * @module UTF-8 length of JavaScript strings, measured without allocating an encoded copy.
 */

/**
 * The number of bytes `TextEncoder` would produce for `text`, without producing them: a multi-MB
 * prompt is measured in one pass over its code units instead of being copied into a new buffer.
 * Lone surrogates count 3 bytes, as `TextEncoder` replaces them with U+FFFD (and so does the
 * tokenizer, which encodes pieces with `TextEncoder` before merging).
 *
 * @example
 * utf8Length('héllo 中文 😀') // 1 + 2 + 3 + 1 + 1 + 3 + 3 + 1 + 4 = 19
 */
export function utf8Length(text: string): number {
  let bytes = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}
