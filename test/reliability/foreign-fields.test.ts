import { describe, expect, it } from 'vitest'
import { guardAi, MemoryQuarantineStore } from '../../src'
import {
  ask,
  chunk,
  foreignCanary,
  MODEL,
  SECRET,
  settle,
  sse,
  streaming,
  whole,
} from './upstreams'

/**
 * Another request's canary is proof that this answer was built from someone else's KV pages, in
 * whatever field of the answer it appears: the guard must withhold it, not only when it sits in the
 * fields it reads as text (`reasoning_content`, `content`, tool arguments, legacy `response`).
 * vLLM (≥ 0.10) streams reasoning as `delta.reasoning`; refusals come as `message.refusal`.
 */
const TOOLS = { tools: [{ type: 'function', function: { name: 'lookup', parameters: {} } }] }

describe('foreign canaries outside the text fields the guard reads', () => {
  it('should withhold a stream whose known reasoning field carries a foreign canary', async () => {
    const leaked = await foreignCanary()
    const upstream = streaming((own) => [
      sse(chunk({ reasoning_content: `tenant A payroll ${leaked}` })),
      sse(chunk({ content: `${own}\nAnswer.` })),
      sse(chunk({}, 'stop')),
      sse('[DONE]'),
    ])
    const r = await settle(
      guardAi(upstream, { secret: SECRET, tenant: 'tenant-b' }).run(
        MODEL,
        ask('hi', { stream: true }),
      ),
    )
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error.code).toBe('response_quarantined')
  })

  // BUG (reported): the stream is released with tenant A's text and canary in `delta.reasoning`.
  it('should withhold a stream whose delta.reasoning carries a foreign canary', async () => {
    const leaked = await foreignCanary()
    const upstream = streaming((own) => [
      sse(chunk({ reasoning: `tenant A payroll ${leaked}` })),
      sse(chunk({ content: `${own}\nAnswer.` })),
      sse(chunk({}, 'stop')),
      sse('[DONE]'),
    ])
    const quarantine = new MemoryQuarantineStore()
    const ai = guardAi(upstream, {
      secret: SECRET,
      tenant: 'tenant-b',
      quarantine: { store: quarantine },
    })
    const r = await settle(ai.run(MODEL, ask('hi', { stream: true })))
    expect(r.ok ? r.body : '').not.toContain('payroll')
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error.code).toBe('response_quarantined')
  })

  // BUG (reported): with tools (scan-only) an event of an unknown shape passes unscanned.
  it('should withhold a stream event of unknown shape that carries a foreign canary', async () => {
    const leaked = await foreignCanary()
    const upstream = streaming(() => [
      sse(JSON.stringify({ text: `tenant A payroll ${leaked}` })),
      sse(chunk({ content: 'Answer.' })),
      sse(chunk({}, 'stop')),
      sse('[DONE]'),
    ])
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'tenant-b' })
    const r = await settle(ai.run(MODEL, ask('hi', { stream: true, ...TOOLS })))
    expect(r.ok ? r.body : '').not.toContain('payroll')
    expect(r.ok).toBe(false)
  })

  // BUG (reported): a whole answer's `message.refusal` is released unscanned.
  it('should withhold a whole answer whose message.refusal carries a foreign canary', async () => {
    const leaked = await foreignCanary()
    const upstream = whole((own) => ({
      choices: [{ message: { content: `${own}\nOK`, refusal: `payroll ${leaked}` } }],
    }))
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'tenant-b' })
    const r = await settle(ai.run(MODEL, ask('hi')))
    expect(r.ok ? r.body : '').not.toContain('payroll')
    expect(r.ok).toBe(false)
  })

  // BUG (reported): after release, a foreign canary in `delta.reasoning` reaches the client.
  it('should end a released stream before a later delta.reasoning with a foreign canary', async () => {
    const leaked = await foreignCanary()
    const upstream = streaming((own) => [
      sse(chunk({ content: `${own}\nAnswer begins.` })),
      sse(chunk({ content: ' More.' })),
      sse(chunk({ reasoning: `tenant A payroll ${leaked}` })),
      sse(chunk({}, 'stop')),
      sse('[DONE]'),
    ])
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'tenant-b' })
    const r = await settle(ai.run(MODEL, ask('hi', { stream: true })))
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error.code).toBe('response_quarantined')
    expect(r.body ?? '').not.toContain('payroll')
  })

  it('should release the same shapes when they carry no foreign canary', async () => {
    const upstream = streaming((own) => [
      sse(chunk({ reasoning: 'thinking about it' })),
      sse(JSON.stringify({ text: 'side channel' })),
      sse(chunk({ content: `${own}\nAnswer.` })),
      sse(chunk({}, 'stop')),
      sse('[DONE]'),
    ])
    const ai = guardAi(upstream, { secret: SECRET, tenant: 'tenant-b' })
    const r = await settle(ai.run(MODEL, ask('hi', { stream: true })))
    expect(r).toMatchObject({ ok: true })
    expect(r.ok && r.body).toContain('Answer.')
    expect(r.ok && r.body).not.toMatch(/cnry_/i)
  })
})
