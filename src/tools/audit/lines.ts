/**
 * @module Bytes to lines, streaming: UTF-8 decoded across chunk boundaries, `\n` or `\r\n` ends, the
 * last line yielded even without an end. Memory: one line at a time (plus one chunk). Linear in the
 * input: a chunk is searched once, so a line of hundreds of megabytes (a 1M-token prompt logged whole)
 * costs no more per byte than a short one.
 */

/**
 * The lines of a byte stream.
 *
 * @example
 * for await (const line of linesOf(fileChunks)) handle(line)
 */
export async function* linesOf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8')
  // The current line's pieces from earlier chunks (joined once, when its end arrives).
  let pending: string[] = []
  const finish = (tail: string): string => {
    const line = pending.length === 0 ? tail : pending.join('') + tail
    pending = []
    return line.endsWith('\r') ? line.slice(0, -1) : line
  }
  for await (const chunk of chunks) {
    const text = decoder.decode(chunk, { stream: true })
    let start = 0
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      yield finish(text.slice(start, end))
      start = end + 1
    }
    if (start < text.length) pending.push(text.slice(start))
  }
  const rest = decoder.decode()
  if (rest !== '' || pending.length > 0) yield finish(rest)
}
