/**
 * @module The deployed Worker's secrets policy, its default (no GUARD_SECRETS: high-
 * confidence kinds substituted, medium ones counted), through its OpenAI-compatible route against the
 * simulator: an OpenAI key and a card number go to the engine as stand-ins, come back to the client
 * as their values, and no log line holds either.
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { captureConsole } from '../reliability/support'
import { GENERATORS, rng } from '../secrets/generate'
import { chat, document } from '../support/prompts'
import { valuesIn } from '../support/secrets'
import { captureWorkerVerdicts } from '../support/verdicts'
import { ADMIN, get, KEY_A, KEY_B, post, sim } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'

beforeEach(async () => {
  await sim.reset({
    mode: 'fixed',
    prefillTokensPerSecond: 500_000,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  })
})

/**
 * A short OpenAI key (`sk-` + 48, so its line is quoted whole: the simulator clips quotes at 90
 * characters) and an ungrouped 16-digit card, from the corpus generators.
 */
function secrets(): { key: string; card: string } {
  const r = rng(2026)
  let key = ''
  let card = ''
  while (key === '' || card === '') {
    const k = GENERATORS['openai-key']!(r).value
    if (k.length < 60 && key === '') key = k
    const c = GENERATORS['card-number']!(r).value
    if (/^\d{16}$/.test(c) && card === '') card = c
  }
  return { key, card }
}

/**
 * Every line the simulator may quote holds a secret (it quotes the first, four spread, the last).
 * Requests give it room (`max_tokens`): an answer cut at its limit may end inside a stand-in, which
 * the client then gets cut short, as docs/secrets.md says (never a value of anyone's).
 */
function notes(key: string, card: string): string {
  const lines: string[] = ['Deploy notes:']
  for (let i = 0; i < 4; i++) {
    lines.push(`export OPENAI_API_KEY="${key}"`, `Please charge card ${card} exp 09/29.`)
  }
  return lines.join('\n')
}

/** The answer's texts (reasoning and content), whole or streamed. */
async function answerText(res: Response, stream: boolean): Promise<string> {
  const body = await res.text()
  if (!stream) {
    const json = JSON.parse(body) as {
      choices: { message: { content: string; reasoning_content?: string | null } }[]
    }
    const m = json.choices[0]!.message
    return `${m.reasoning_content ?? ''}\n${m.content}`
  }
  let out = ''
  for (const block of body.split('\n\n')) {
    const data = block.replace(/^data: /, '')
    if (!data || data === '[DONE]') continue
    const delta = (JSON.parse(data) as { choices: { delta?: Record<string, unknown> }[] })
      .choices[0]?.delta
    out += `${delta?.reasoning_content ?? ''}${delta?.content ?? ''}`
  }
  return out
}

/** Every OpenAI-key-shaped and 16-digit string in the text: all must be the client's own values. */
function keyAndCardShapes(text: string): { keys: string[]; cards: string[] } {
  return {
    keys: [...text.matchAll(/sk-[A-Za-z0-9_-]{20,}/g)].map((m) => m[0]),
    cards: [...text.matchAll(/(?<!\d)\d{16}(?!\d)/g)].map((m) => m[0]),
  }
}

describe('the Worker’s default secrets policy', () => {
  const verdicts = captureWorkerVerdicts()

  for (const stream of [false, true]) {
    it(`should give the client its key and card back, and log neither (${stream ? 'stream' : 'whole'})`, async () => {
      const { key, card } = secrets()
      const res = await post(
        '/v1/chat/completions',
        {
          model: MODEL,
          stream,
          max_tokens: 2048,
          messages: [{ role: 'user', content: notes(key, card) }],
        },
        KEY_A,
      )
      expect(res.status).toBe(200)
      const text = await answerText(res, stream)
      // The simulator quoted what it was sent; the client reads its own values there, and nothing else
      // of their shape (no stand-in).
      const shapes = keyAndCardShapes(text)
      expect(shapes.keys.length).toBeGreaterThan(0)
      expect(shapes.cards.length).toBeGreaterThan(0)
      expect(new Set(shapes.keys)).toEqual(new Set([key]))
      expect(new Set(shapes.cards)).toEqual(new Set([card]))

      const [line, ...more] = verdicts.events
      expect(more).toEqual([])
      expect(line?.action).toBe('release')
      // The default substitutes both (high confidence); the counts show it, never the values.
      expect(line?.secrets?.substituted).toEqual({ 'openai-key': 4, 'card-number': 4 })
      if (!stream) {
        expect(line?.secrets?.restored?.['openai-key']).toBeGreaterThan(0)
        expect(line?.secrets?.restored?.['card-number']).toBeGreaterThan(0)
      }
      expect(valuesIn(verdicts.events, [key, card])).toEqual([])
    })
  }

  it('should send the engine stand-ins only, and keep every log line free of the values', async () => {
    const { key, card } = secrets()
    // The Worker's own handler and bindings, with its AI binding recorded on the way to the simulator.
    const sent: Record<string, unknown>[] = []
    const ai = (env as unknown as { AI: Ai }).AI
    const bindings = {
      ...(env as unknown as Env),
      AI: {
        run: (model: string, inputs: Record<string, unknown>, options?: unknown) => {
          sent.push(structuredClone(inputs))
          return (ai as unknown as { run: (...args: unknown[]) => Promise<unknown> }).run(
            model,
            inputs,
            options,
          )
        },
      },
    } as unknown as Env
    for (const stream of [false, true]) {
      const logs = captureConsole()
      let text: string
      try {
        const ctx = createExecutionContext()
        const res = await worker.fetch(
          new Request('http://guard.test/v1/chat/completions', {
            method: 'POST',
            headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              model: MODEL,
              stream,
              max_tokens: 2048,
              messages: [{ role: 'user', content: notes(key, card) }],
            }),
          }),
          bindings,
          ctx,
        )
        expect(res.status).toBe(200)
        text = await answerText(res, stream)
        await waitOnExecutionContext(ctx)
      } finally {
        logs.restore()
      }
      expect(sent.length).toBeGreaterThan(0)
      expect(valuesIn(sent, [key, card])).toEqual([])
      // What the engine got in their place, and that none of it came back to the client.
      const prompt = JSON.stringify(sent.at(-1))
      const standIns = keyAndCardShapes(prompt)
      expect(standIns.keys.length).toBeGreaterThan(0)
      expect(standIns.cards.length).toBeGreaterThan(0)
      for (const s of [...standIns.keys, ...standIns.cards]) expect(text).not.toContain(s)
      expect(text).toContain(key)
      expect(text).toContain(card)
      // Every line the Worker logged (verdicts, telemetry) holds neither value nor stand-in.
      expect(logs.lines.length).toBeGreaterThan(0)
      for (const v of [key, card, ...standIns.keys, ...standIns.cards]) {
        expect(logs.text()).not.toContain(v)
      }
    }
  })

  it('should count a medium-confidence kind (an SSN) and send it as it is, logging no value', async () => {
    const ssn = GENERATORS['us-ssn']!(rng(7)).value
    const res = await post(
      '/v1/chat/completions',
      {
        model: MODEL,
        max_tokens: 2048,
        messages: [{ role: 'user', content: `SSN: ${ssn} on file` }],
      },
      KEY_A,
    )
    expect(res.status).toBe(200)
    // Sent unchanged (policy `detect`), so the simulator quotes it as it is.
    expect(await answerText(res, false)).toContain(ssn)
    const [line] = verdicts.events
    expect(line?.secrets).toEqual({ detected: { 'us-ssn': 1 } })
    expect(valuesIn(verdicts.events, [ssn])).toEqual([])
  })

  it('should keep A’s key and card from B when the engine leaks A’s pages, and from the incident', async () => {
    const { key, card } = secrets()
    // The leak of test/worker/quarantine.test.ts: the Worker believes the pool is the window; the
    // simulator's is 8,192 tokens, so B's 12,000-token prompt is answered from stale pages of A's.
    await sim.reset({
      mode: 'fixed',
      poolTokens: 8_192,
      contextWindow: 16_384,
      prefillTokensPerSecond: 500_000,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    })
    // Every line holds a secret (and is shorter than a quote): whatever B's answer quotes holds one.
    const lines = Array.from({ length: 160 }, (_, i) =>
      i % 2 === 0 ? `A${i} export OPENAI_API_KEY="${key}"` : `A${i} charge card ${card} exp 09/29.`,
    )
    const a = await post('/v1/chat/completions', { model: MODEL, ...chat(lines.join('\n')) }, KEY_A)
    expect(a.status).toBe(200)
    await sim.configure({ mode: 'pd-abort-leak' })
    let quoted = 0
    for (const stream of [false, true]) {
      const res = await post(
        '/v1/chat/completions',
        { model: MODEL, stream, ...chat(document('TENANT-B', 12_000)) },
        KEY_B,
      )
      const body = await res.text()
      expect(body).not.toContain(key)
      expect(body).not.toContain(card)
      expect(body).not.toContain('charge card')
      const incident = /"incident_id":"([^"]+)"/.exec(body)?.[1]
      expect(incident).toMatch(/^inc_/)
      // The incident as the admin reads it (decrypted): A's values nowhere in it.
      const record = await (await get(`/admin/incidents/${incident}`, ADMIN)).text()
      expect(record).toContain('tenant-b')
      expect(record).not.toContain(key)
      expect(record).not.toContain(card)
      // What leaked were A's stand-ins: the withheld answer quotes some, none of them a value.
      const leaked = keyAndCardShapes(record)
      quoted += leaked.keys.length + leaked.cards.length
      expect([...leaked.keys, ...leaked.cards]).not.toContain(key)
      expect([...leaked.keys, ...leaked.cards]).not.toContain(card)
    }
    expect(quoted).toBeGreaterThan(0)
    expect(valuesIn(verdicts.events, [key, card])).toEqual([])
  })
})
