import { beforeAll, describe, expect, it } from 'vitest'
import {
  CANARY_ALPHABET,
  CANARY_PATTERN,
  type CanaryKey,
  importCanaryKey,
  mintCanary,
  scanText,
  tenantTag,
} from '../../src/core/canary'

let key: CanaryKey
let own: string
let foreign: string
let globexTag: string

beforeAll(async () => {
  key = await importCanaryKey('scan-test-secret-0123456789abcdefghij')
  own = await mintCanary(key, { requestId: 'req-own', tenant: 'acme' })
  foreign = await mintCanary(key, { requestId: 'req-other', tenant: 'globex' })
  globexTag = await tenantTag(key, 'globex')
})

describe('scanText: the whole-answer cut', () => {
  it('should not let a look-alike swallow the start of a real foreign canary', async () => {
    const text = `cnry_${'a'.repeat(20)}${foreign} tail`
    const { text: out, findings } = await scanText({ key, own }, 'content', text)
    // The foreign canary is cut out whole, including the 4 chars the look-alike overlapped.
    expect(out).toBe(`cnry_${'a'.repeat(20)} tail`)
    expect(out.match(CANARY_PATTERN)).toBeNull()
    expect(findings.map((f) => f.kind)).toEqual(['lookalike', 'foreign'])
  })

  it('should cut a fragment of our own canary that can no longer grow, and keep other cnry_ text', async () => {
    const cutOff = await scanText({ key, own }, 'content', `quote: ${own.slice(0, 17)}`)
    expect(cutOff.text).toBe('quote: ')
    const midText = await scanText({ key, own }, 'content', `“${own.slice(0, 12)}” and more`)
    expect(midText.text).toBe('“” and more')
    const unrelated = await scanText({ key, own }, 'content', 'the prefix cnry_ and cnry_zz9 stay')
    expect(unrelated.text).toBe('the prefix cnry_ and cnry_zz9 stay')
  })

  it('should treat every verifying canary as foreign when there is no own canary', async () => {
    const { text, findings } = await scanText({ key, own: undefined }, 'content', `a ${own} b`)
    expect(text).toBe('a  b')
    expect(findings).toEqual([
      expect.objectContaining({ kind: 'foreign', tenantTag: await tenantTag(key, 'acme') }),
    ])
  })

  it('should reject an own canary that is not canary-shaped', async () => {
    await expect(scanText({ key, own: 'not-a-canary' }, 'content', 'text')).rejects.toThrow(/own/)
  })

  it('should report look-alikes and keep them (but for a piece of ours they hold)', async () => {
    const lookalike = `cnry_${'7'.repeat(24)}`
    const mutated = own.slice(0, -1) + (own.endsWith('0') ? '1' : '0')
    const text = `see ${lookalike} and ${mutated}!`
    const { text: out, findings } = await scanText({ key, own }, 'tool:1', text)
    // The mutated canary's first 28 characters are a piece of ours: cut.
    expect(out).toBe(`see ${lookalike} and ${mutated.slice(-1)}!`)
    expect(findings).toEqual([
      { kind: 'lookalike', channel: 'tool:1' },
      { kind: 'lookalike', channel: 'tool:1' },
    ])
  })

  it('should never carry token text in findings', async () => {
    const { findings } = await scanText(
      { key, own },
      'content',
      `${foreign} cnry_${'b'.repeat(24)}`,
    )
    expect(findings).toHaveLength(2)
    expect(JSON.stringify(findings)).not.toMatch(/cnry_/i)
  })
})

describe('scanText', () => {
  it('should strip own, withhold foreign and keep plain text of a whole answer', async () => {
    const text = `${own}\nThe answer is 42. ${foreign}`
    const { text: out, findings } = await scanText({ key, own }, 'content', text)
    expect(out).toBe('\nThe answer is 42. ')
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatchObject({ kind: 'foreign', tenantTag: globexTag })
  })

  it('should change nothing in a text without canaries, even one ending in a prefix', async () => {
    const text = `Plain answer with ${CANARY_ALPHABET} and a trailing cnry_0ab`
    expect(await scanText({ key, own }, 'reasoning', text)).toEqual({ text, findings: [] })
  })
})
