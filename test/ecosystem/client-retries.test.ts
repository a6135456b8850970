import { SELF } from 'cloudflare:test'
import { createOpenAICompatible as compatible3 } from '@ai-sdk/openai-compatible'
import { generateText as generateText7, streamText as streamText7 } from 'ai'
import { generateText as generateText6, streamText as streamText6 } from 'ai6'
import OpenAI7 from 'openai'
import { createOpenAICompatible as compatible2 } from 'openai-compatible2'
import OpenAI6 from 'openai6'
import { beforeEach, describe, expect, it } from 'vitest'
import { hasCanary } from '../support/leak-scenario'
import { document } from '../support/prompts'
import { ADMIN, get, KEY_A, KEY_B, POOL_BELOW_PROFILE, sim } from '../support/worker'

const BASE = 'http://guard.test/v1'
const MODEL = '@cf/zai-org/glm-5.3'

/** A fetch to the Worker that counts what the client library sent: a resend shows as a second call. */
function countingFetch() {
  const sent = { count: 0 }
  const fetch = (input: string | URL | Request, init?: RequestInit) => {
    sent.count++
    return SELF.fetch(input, init)
  }
  return { sent, fetch }
}

/** How many incidents the Worker has recorded for tenant B. */
async function incidentsOfB(): Promise<number> {
  const res = await get('/admin/incidents?tenant=tenant-b&limit=100', ADMIN)
  return ((await res.json()) as { data: unknown[] }).data.length
}

/** What one client library did with one request: what it raised or answered, and what it sent. */
interface Seen {
  sent: number
  error?: unknown
  text: string
}

/** One real client library asking once with its default retry policy, whole or streamed. */
type Ask = (key: string, prompt: string, stream: boolean) => Promise<Seen>

function openAi(Client: typeof OpenAI6 | typeof OpenAI7): Ask {
  return async (key, prompt, stream) => {
    const { sent, fetch } = countingFetch()
    // The library's own default (two retries, honouring `x-should-retry`).
    // One call shape over both majors (their types differ only in what this test does not use).
    const ai = new Client({ baseURL: BASE, apiKey: key, fetch }) as unknown as OpenAI7
    const messages = [{ role: 'user' as const, content: prompt }]
    let text = ''
    try {
      if (stream) {
        const chunks = await ai.chat.completions.create({ model: MODEL, messages, stream: true })
        for await (const chunk of chunks) text += chunk.choices[0]?.delta?.content ?? ''
      } else {
        const answer = await ai.chat.completions.create({ model: MODEL, messages })
        text = answer.choices[0]?.message.content ?? ''
      }
      return { sent: sent.count, text }
    } catch (error) {
      return { sent: sent.count, error, text }
    }
  }
}

/** What this test calls of one AI SDK major: its provider's model, `generateText`, `streamText`. */
interface AiSdk {
  model(options: { name: string; baseURL: string; apiKey: string; fetch: Fetch }): unknown
  generateText(options: { model: unknown; prompt: string }): Promise<{ text: string }>
  streamText(options: {
    model: unknown
    prompt: string
    onError: (event: { error: unknown }) => void
  }): { fullStream: AsyncIterable<{ type: string; text?: string }> }
}
type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

function aiSdk({ model: modelOf, generateText, streamText }: AiSdk): Ask {
  return async (key, prompt, stream) => {
    const { sent, fetch } = countingFetch()
    const model = modelOf({ name: 'guard', baseURL: BASE, apiKey: key, fetch })
    if (!stream) {
      try {
        const { text } = await generateText({ model, prompt })
        return { sent: sent.count, text }
      } catch (error) {
        return { sent: sent.count, error, text: '' }
      }
    }
    const errors: unknown[] = []
    const result = streamText({ model, prompt, onError: ({ error }) => void errors.push(error) })
    let text = ''
    for await (const part of result.fullStream)
      if (part.type === 'text-delta') text += part.text ?? ''
    return { sent: sent.count, text, ...(errors.length > 0 ? { error: errors[0] } : {}) }
  }
}

const CLIENTS: Array<[string, Ask]> = [
  ['openai 6', openAi(OpenAI6)],
  ['openai 7', openAi(OpenAI7)],
  [
    'AI SDK 6 (@ai-sdk/openai-compatible 2)',
    aiSdk({
      model: (options) => compatible2(options).chatModel(MODEL),
      generateText: generateText6 as AiSdk['generateText'],
      streamText: streamText6 as unknown as AiSdk['streamText'],
    }),
  ],
  [
    'AI SDK 7 (@ai-sdk/openai-compatible 3)',
    aiSdk({
      model: (options) => compatible3(options).chatModel(MODEL),
      generateText: generateText7 as AiSdk['generateText'],
      streamText: streamText7 as unknown as AiSdk['streamText'],
    }),
  ],
]

/** The status and code a client's error carries, whichever library raised it. */
function statusAndCode(error: unknown): { status: unknown; code: unknown; message: string } {
  const e = error as { status?: number; statusCode?: number; code?: unknown; data?: unknown }
  const data = e.data as { error?: { code?: unknown } } | undefined
  return {
    status: e.status ?? e.statusCode,
    code: e.code ?? data?.error?.code,
    message: String((error as Error).message),
  }
}

beforeEach(async () => {
  await sim.reset(POOL_BELOW_PROFILE)
})

describe('a quarantine through real client libraries, each with its default retries', () => {
  for (const [name, ask] of CLIENTS) {
    for (const stream of [false, true]) {
      it(`${name}, ${stream ? 'streamed' : 'whole'}: one request, one incident, a clear error`, async () => {
        // A's long prompt fills the engine's pages; B's is over the real pool and reads them.
        const own = await ask(KEY_A, document('TENANT-A', 6_000), false)
        expect(own.error).toBeUndefined()
        const before = await incidentsOfB()
        const seen = await ask(KEY_B, document('TENANT-B', 12_000), stream)
        expect(seen.sent).toBe(1)
        expect(await incidentsOfB()).toBe(before + 1)
        const { status, code, message } = statusAndCode(seen.error)
        expect(status).toBe(422)
        expect(code).toBe('response_quarantined')
        expect(message).toMatch(/withheld/)
        expect(seen.text).toBe('')
        expect(message).not.toContain('TENANT-A')
        expect(hasCanary(message)).toBe(false)
      }, 60_000)
    }

    // Must not fire: an ordinary answer arrives once, whole and streamed.
    it(`${name}: an honest answer is delivered on the first request`, async () => {
      for (const stream of [false, true]) {
        const seen = await ask(KEY_A, document('TENANT-A', 500), stream)
        expect(seen.error).toBeUndefined()
        expect(seen.sent).toBe(1)
        expect(seen.text).toContain('TENANT-A ledger entry')
      }
    }, 60_000)
  }
})
