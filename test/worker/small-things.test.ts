/**
 * @module What a user notices first (issue 48, point 5): the Worker's small surfaces behave as an
 * OpenAI-compatible endpoint's do.
 */
import { beforeEach, describe, expect, it } from 'vitest'
import { chat, document } from '../support/prompts'
import { KEY_A, post, sim } from '../support/worker'

const MODEL = '@cf/zai-org/glm-5.3'

/** An OpenAI chat chunk, as far as these tests read it. */
interface Chunk {
  choices: { delta?: Record<string, string>; finish_reason: string | null }[]
  usage?: unknown
}

beforeEach(async () => {
  await sim.reset({
    mode: 'fixed',
    prefillTokensPerSecond: 500_000,
    decodeTokensPerSecond: Infinity,
  })
})

describe('streamed deltas', () => {
  it('should send no chunk whose delta the guard emptied, and keep role, finish and usage', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: MODEL, stream: true, ...chat(document('TENANT-A', 400)) },
      KEY_A,
    )
    const events = (await res.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice('data: '.length)) as Chunk)
    const blank = events.filter((e) => {
      const delta = e.choices[0]?.delta
      return (
        e.choices.length === 1 &&
        e.choices[0]!.finish_reason === null &&
        delta !== undefined &&
        Object.values(delta).every((v) => v === '')
      )
    })
    expect(blank).toEqual([])
    expect(events[0]!.choices[0]!.delta?.role).toBe('assistant')
    expect(events.some((e) => e.choices[0]?.finish_reason === 'stop')).toBe(true)
    expect(events.some((e) => e.usage !== undefined)).toBe(true)
  })
})
