/**
 * @module The simulated model reads the echo directive it follows as its instruction, not as
 * material: it quotes the user's text around it, and every other directive (stale pages) verbatim.
 */
import { describe, expect, it } from 'vitest'
import { guardAi } from '../../src'
import { buildEchoDirective, injectCanary } from '../../src/core/canary'
import { chatText, quickEngine as engine, GLM, LLAMA, secretLines, userMessage } from './helpers'

/** Canary-shaped codes (`cnry_` + 24 base32), as the guard makes them. */
const code = (tag: string): string => `cnry_${tag}${'0'.repeat(24 - tag.length)}`
const QUESTION = 'Summarise our Q3 shipping plan in one line.'

describe('the followed echo directive is an instruction', () => {
  it('should quote the user’s text, not the guard’s text directive, and open with the code', async () => {
    const canary = code('own1')
    const inputs = injectCanary(
      userMessage(`${secretLines('A', 8)}\n${QUESTION}`, { max_tokens: 600 }),
      canary,
    )
    const out = chatText(await engine().binding('a').run(GLM, inputs))
    expect(out.content.startsWith(`${canary} From the context → “`)).toBe(true)
    const rest = out.content.slice(canary.length)
    for (const text of [rest, out.reasoning]) {
      expect(text).not.toContain(canary)
      expect(text).not.toMatch(/begin your reply|then answer normally/i)
    }
    // The last line before the directive is what the answer ends on.
    expect(out.content).toContain(`and at the end: “${QUESTION}”`)
    expect(out.reasoning).toContain(`It ends with “${QUESTION}”`)
    expect(out.reasoning).toContain('It opens with “SECRET-A-7Q2X9 ledger row 0')
    expect(out.reasoning).toContain('I am asked to begin my reply with a code on its own line.')
  })

  it('should not quote the guard’s JSON directive either', async () => {
    const canary = code('json1')
    const inputs = injectCanary(
      userMessage(QUESTION, { response_format: { type: 'json_object' } }),
      canary,
      'json',
    )
    const out = chatText(await engine().binding('a').run(GLM, inputs))
    const object = JSON.parse(out.content) as Record<string, string>
    expect(object.guard_echo).toBe(canary)
    expect(object.answer).toContain(`“${QUESTION}”`)
    expect(`${object.answer}${out.reasoning}`).not.toMatch(/cnry_|start your json object/i)
  })

  it('should keep the user’s words on the directive’s own line', async () => {
    const inputs = userMessage(`Name one fjord. ${buildEchoDirective(code('line'))}`)
    const out = chatText(await engine().binding('a').run(GLM, inputs))
    expect(out.content).toContain('and at the end: “Name one fjord.”')
    expect(out.content.slice(29)).not.toContain('cnry_')
  })

  it('should say the context is empty when the prompt is only the directive', async () => {
    const canary = code('empty')
    for (const model of [GLM, LLAMA]) {
      const out = await engine()
        .binding('a')
        .run(model, injectCanary(userMessage(''), canary))
      const { content, reasoning } =
        model === LLAMA
          ? { content: (out as { response: string }).response, reasoning: '' }
          : chatText(out)
      expect(content).toBe(
        `${canary} The context is empty: there is no provided material to quote.`,
      )
      expect(reasoning).not.toContain('cnry_')
      expect(reasoning).not.toContain('“')
    }
  })

  it('should be deterministic per seed', async () => {
    const inputs = injectCanary(userMessage(secretLines('A', 40)), code('seed'))
    const run = async (seed: number) =>
      chatText(await engine({ seed }).binding('a').run(GLM, inputs))
    expect(await run(7)).toEqual(await run(7))
    expect((await run(7)).content).not.toBe((await run(8)).content)
  })

  it('should release through the guard an answer with the user’s text and no hole', async () => {
    const ai = guardAi(engine().binding('a'), {
      secret: 'instruction-test-secret-0123456789abcdef',
      tenant: 'tenant-a',
    })
    const out = chatText(await ai.run(GLM, userMessage(QUESTION, { max_tokens: 400 })))
    expect(out.content).toBe(
      `From the context → “${QUESTION}” … “${QUESTION}” … and at the end: “${QUESTION}”. ` +
        'That is what the provided material says.',
    )
    expect(out.reasoning).not.toMatch(/begin your reply|the code {2}|cnry_/i)
  })
})

describe('directives in stale pages are context', () => {
  it('should quote another request’s directive with its canary, and follow only the last one', async () => {
    // A small pool that one over-pool request reads whole: six short guarded requests of tenant A,
    // each ending with its own directive, then B's placeholder reads their pages (pd-abort-leak).
    const sim = engine({ poolTokens: 1024, mode: 'pd-abort-leak' })
    for (let k = 0; k < 6; k++) {
      const inputs = injectCanary(
        userMessage(`TENANT-A note ${k}: the vault code is 44${k}1.`),
        code(`a${k}`),
      )
      await sim.binding('a').run(GLM, inputs)
    }
    const b = chatText(await sim.binding('b').run(GLM, userMessage('x '.repeat(2000))))
    const followed = sim.stats().recent.at(-1)?.echoed
    expect(followed).toMatch(/^cnry_a\d0+$/)
    expect(b.content.startsWith(`${followed} `)).toBe(true)
    const quoted = [
      ...`${b.content}${b.reasoning}`.matchAll(/reply with the code (cnry_\w+)/g),
    ].map((m) => m[1])
    // Foreign directives surface verbatim, canary included; the followed one is never quoted.
    expect(quoted.length).toBeGreaterThan(0)
    expect(quoted).not.toContain(followed)
    for (const canary of quoted) expect(canary).toMatch(/^cnry_a\d0+$/)
    expect(b.content).toContain('TENANT-A note')
  })
})
