/**
 * @module Reads a JSON request body within a byte limit, strictly: bad input gets a clear error.
 */
import { GuardError } from '../errors'

/**
 * Parses the body as a JSON object. Never buffers more than `limit` bytes: a declared or streamed size
 * over the limit is refused with 413 as soon as it is seen. Invalid UTF-8 and malformed JSON are 400s.
 *
 * @example
 * const body = await readJsonObject(c.req.raw, 32 * 1024 * 1024)
 */
export async function readJsonObject(
  request: Request,
  limit: number,
): Promise<Record<string, unknown>> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body)
    throw new GuardError('invalid_request', 'The request has no body; send a JSON object.')
  const reader = request.body.getReader()
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })
  const parts: string[] = []
  let size = 0
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      size += next.value.byteLength
      if (size > limit) {
        await reader.cancel()
        throw tooLarge(limit)
      }
      parts.push(decoder.decode(next.value, { stream: true }))
    }
    parts.push(decoder.decode())
  } catch (error) {
    if (error instanceof GuardError) throw error
    throw new GuardError('invalid_request', 'The request body is not valid UTF-8.', {
      cause: error,
    })
  }
  let value: unknown
  try {
    value = JSON.parse(parts.join(''))
  } catch {
    throw new GuardError('invalid_request', 'The request body is not valid JSON.')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GuardError('invalid_request', 'The request body must be a JSON object.')
  }
  return value as Record<string, unknown>
}

function tooLarge(limit: number): GuardError {
  return new GuardError('invalid_request', `The request body is larger than ${limit} bytes.`, {
    status: 413,
  })
}
