/**
 * @module The official `openai` client against the guard Worker's `/v1`: what a tenant receives, and
 * the checks every delivery must pass, shared by the workerd suite and the real `wrangler dev` run.
 */
import OpenAI from 'openai'
import { expect } from 'vitest'
import { hasCanary } from '../support/leak-scenario'

export const MODEL = '@cf/zai-org/glm-5.3'

/** Development tenant keys from wrangler.toml's `[env.dev.vars]`. */
export const KEYS = { 'tenant-a': 'dev-key-tenant-a', 'tenant-b': 'dev-key-tenant-b' } as const

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

/**
 * An OpenAI client for one tenant of the Worker at `baseURL`, retries off unless asked for: a retried
 * error would make a second upstream call and blur what one request did.
 *
 * @example
 * const a = client('http://127.0.0.1:8787/v1', 'tenant-a')
 */
export function client(
  baseURL: string,
  tenant: keyof typeof KEYS,
  options: { fetch?: Fetch; maxRetries?: number } = {},
): OpenAI {
  return new OpenAI({
    baseURL,
    apiKey: KEYS[tenant],
    maxRetries: options.maxRetries ?? 0,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
}

/** One answer's reasoning and content, streamed or whole, plus the guard's request id header. */
export interface Answer {
  text: string
  requestId: string | null
}

/**
 * Asks for a completion of `content` and returns everything the client received as text. GLM-5.3 is a
 * reasoning model: `reasoning_content` (not in the client's types) is collected too, since it can leak
 * as much as the content.
 *
 * @example
 * const { text } = await ask(a, document('TENANT-A', 400), true)
 */
export async function ask(
  ai: OpenAI,
  content: string,
  stream: boolean,
  extra: { max_tokens?: number } = {},
): Promise<Answer> {
  const messages = [{ role: 'user' as const, content }]
  if (!stream) {
    const { data, response } = await ai.chat.completions
      .create({ model: MODEL, messages, ...extra })
      .withResponse()
    const message = data.choices[0]?.message as {
      content: string | null
      reasoning_content?: string
    }
    expect(data.object).toBe('chat.completion')
    return {
      text: `${message.reasoning_content ?? ''}${message.content ?? ''}`,
      requestId: response.headers.get('x-guard-request-id'),
    }
  }
  const { data, response } = await ai.chat.completions
    .create({ model: MODEL, messages, stream: true, ...extra })
    .withResponse()
  let text = ''
  for await (const chunk of data) {
    expect(chunk.object).toBe('chat.completion.chunk')
    const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string }
    text += `${delta?.reasoning_content ?? ''}${delta?.content ?? ''}`
  }
  return { text, requestId: response.headers.get('x-guard-request-id') }
}

/** Asserts a delivery holds its tenant's own text and nothing of anyone else's, and no canary. */
export function expectOwn(answer: Answer, own: string, others: string[]): void {
  expect(answer.text).toContain(`${own} ledger entry`)
  for (const other of others) expect(answer.text).not.toContain(other)
  expect(hasCanary(answer.text)).toBe(false)
  expect(answer.requestId).toBeTruthy()
}

/** The client error a call rejected with (fails the test if it resolved or threw anything else). */
export async function apiError(
  promise: Promise<unknown>,
): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error
    throw error
  }
  throw new Error('expected the request to fail, but it succeeded')
}

/**
 * Asserts a withheld answer reached the client as the client's own 422 error class with our code, and
 * returns the incident id, which the body and the `x-guard-incident-id` header both carry.
 *
 * @example
 * const incident = expectQuarantined(await apiError(ask(b, document('TENANT-B', 12_000), false)))
 */
export function expectQuarantined(
  error: InstanceType<typeof OpenAI.APIError>,
  others: string[],
): string {
  expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError)
  expect(error.status).toBe(422)
  expect(error.code).toBe('response_quarantined')
  expect(error.type).toBe('server_error')
  const incident = (error.error as { incident_id?: string }).incident_id
  expect(incident).toMatch(/^inc_/)
  expect(error.headers?.get('x-guard-incident-id')).toBe(incident)
  for (const other of others) expect(error.message).not.toContain(other)
  expect(hasCanary(error.message)).toBe(false)
  return incident!
}
