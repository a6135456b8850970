/**
 * @module The app's own sign-in (not part of the guard): an API key the server checks decides whose
 * request it is. The guard's tenant is that verified user, never a header or body field a client writes.
 */

/**
 * The user an `Authorization: Bearer <key>` header proves, or undefined. Keys are stored as SHA-256 hex
 * (`USER_KEYS`, JSON `{ "<hex>": "<user id>" }`) and looked up by hash, so the stored keys reveal none.
 *
 * @example
 * const user = await verifiedUser(request, env.USER_KEYS) // 'alice' for `Bearer dev-key-alice`
 */
export async function verifiedUser(request: Request, keys: string): Promise<string | undefined> {
  const key = request.headers.get('authorization')?.match(/^Bearer ([^\s,]+)$/)?.[1]
  if (!key) return undefined
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key))
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
  let users: unknown
  try {
    users = JSON.parse(keys)
  } catch {
    return undefined
  }
  const user = (users as Record<string, unknown> | null)?.[hex]
  return typeof user === 'string' && user !== '' ? user : undefined
}

/**
 * The 401 for a request without a valid key, in the OpenAI error shape the guard's own errors have, so
 * a client reads every refusal the same way.
 *
 * @example
 * if (!user) return signInFirst()
 */
export function signInFirst(): Response {
  const error = {
    message: 'Sign in first.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  }
  return Response.json({ error: { ...error, param: null } }, { status: 401 })
}
