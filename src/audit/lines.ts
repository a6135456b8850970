/**
 * @module Bytes to lines, streaming: UTF-8 decoded across chunk boundaries, `\n` or `\r\n` ends, the
 * last line yielded even without an end. Memory: one line at a time (plus one chunk).
 */

/**
 * The lines of a byte stream.
 *
 * @example
 * for await (const line of linesOf(fileChunks)) handle(line)
 */
export async function* linesOf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8')
  let pending = ''
  for await (const chunk of chunks) {
    const text = pending + decoder.decode(chunk, { stream: true })
    let start = 0
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      yield text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end)
      start = end + 1
    }
    pending = start === 0 ? text : text.slice(start)
  }
  const rest = pending + decoder.decode()
  if (rest !== '') yield rest.endsWith('\r') ? rest.slice(0, -1) : rest
}
