import { env } from 'cloudflare:test'
import { describe, expect, it, vi } from 'vitest'
import { GuardError } from '../../src/core/errors'
import { TextMemo } from '../../src/core/memo/text-memo'
import { guardFor } from '../../src/worker/config'
import type { Env } from '../../src/worker/env'
import { chat, document } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'

/** The Worker's bindings with `GUARD_TEXT_MEMO_BYTES` set (a new object: a guard of its own). */
const withMemo = (value?: string): Env => {
  const base = { ...(env as unknown as Env) }
  delete base.GUARD_TEXT_MEMO_BYTES
  return value === undefined ? base : { ...base, GUARD_TEXT_MEMO_BYTES: value }
}

describe('GUARD_TEXT_MEMO_BYTES', () => {
  it('should remember a tenant’s resent document by default and under a budget, and not at 0', async () => {
    const doc = document('TENANT-A', 3_000)
    // The Worker's guard is the public one, so its memo is seen where a request asks it for a view.
    const views = vi.spyOn(TextMemo.prototype, 'forRequest')
    for (const [value, remembers] of [
      [undefined, true],
      ['1048576', true],
      ['0', false],
    ] as const) {
      views.mockClear()
      const bindings = withMemo(value)
      const guard = guardFor(bindings)
      const ai = guard.wrap(bindings.AI as Parameters<typeof guard.wrap>[0], { tenant: 'tenant-a' })
      for (let turn = 0; turn < 2; turn++) {
        const out = (await ai.run(MODEL, chat(doc))) as {
          choices: { message: { content: string } }[]
        }
        // The answer is the tenant's own, canary removed, with the memo on or off.
        expect(out.choices[0]!.message.content).toContain('TENANT-A')
        expect(out.choices[0]!.message.content).not.toMatch(/cnry_/)
      }
      const memo = views.mock.contexts.at(-1) as TextMemo | undefined
      expect(memo === undefined, String(value)).toBe(!remembers)
      if (remembers) expect(memo!.stats().hits).toBeGreaterThan(0)
    }
    views.mockRestore()
  }, 60_000)

  it('should refuse to start on a budget that is not a whole number of at least 64 KiB', () => {
    // The Worker logs each refusal for its operator: one ai_guard_error line naming the setting.
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
    for (const value of ['lots', '', '1000', '-1', '100000.5']) {
      let error: unknown
      try {
        guardFor(withMemo(value))
      } catch (caught) {
        error = caught
      }
      expect(error, value).toBeInstanceOf(GuardError)
      expect((error as GuardError).code).toBe('guard_unavailable')
      expect((error as GuardError).message).toContain('textMemo.budgetBytes')
    }
    const lines = logged.mock.calls.map((call) => JSON.parse(String(call[0])) as { event: string })
    logged.mockRestore()
    expect(lines).toHaveLength(5)
    for (const line of lines) {
      expect(line).toMatchObject({
        event: 'ai_guard_error',
        error: expect.stringContaining('textMemo.budgetBytes'),
      })
    }
  })
})
