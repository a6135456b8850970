import { beforeAll, describe, expect, it } from 'vitest'
import {
  CANARY_ALPHABET,
  CANARY_PATTERN,
  type CanaryKey,
  CanaryScanner,
  type Finding,
  importCanaryKey,
  mintCanary,
  scanText,
  tenantTag,
} from '../../src/canary'
import type { Channel } from '../../src/format/frames'

const CHANNELS: Channel[] = ['reasoning', 'content', 'tool:0', 'tool:3']

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

/** Push `pieces` on one channel, then end it; collect the released text and findings. */
async function run(scanner: CanaryScanner, channel: Channel, pieces: string[]) {
  let released = ''
  const findings: Finding[] = []
  for (const piece of pieces) {
    const r = await scanner.push(channel, piece)
    released += r.release
    findings.push(...r.findings)
  }
  const last = await scanner.end(channel)
  return { released: released + last.release, findings: [...findings, ...last.findings] }
}

/** Every split of `text` into two pieces, plus one char at a time. */
function splits(text: string): string[][] {
  const out: string[][] = []
  for (let cut = 0; cut <= text.length; cut++) out.push([text.slice(0, cut), text.slice(cut)])
  out.push(Array.from(text))
  return out
}

describe('CanaryScanner', () => {
  it('should strip the own canary split at every offset, on every channel', async () => {
    const text = `${own}\nHello, ${own.toUpperCase()} world c`
    for (const channel of CHANNELS) {
      for (const pieces of splits(text)) {
        const { released, findings } = await run(new CanaryScanner(key, own), channel, pieces)
        expect(released, JSON.stringify(pieces)).toBe('\nHello,  world c')
        expect(findings).toEqual([])
      }
    }
  })

  it('should withhold and report a foreign canary split at every offset', async () => {
    const text = `Leaked: x${foreign}y, then more.`
    for (const pieces of splits(text)) {
      const { released, findings } = await run(new CanaryScanner(key, own), 'content', pieces)
      expect(released).toBe('Leaked: xy, then more.')
      expect(findings).toEqual([
        {
          kind: 'foreign',
          channel: 'content',
          tenantTag: globexTag,
          nonce: expect.stringMatching(/^[0-9a-f]{8}$/),
        },
      ])
    }
  })

  it('should never release a piece that could still become a canary', async () => {
    // Every push's release must be safe on its own: no 5+-char prefix of either canary may end it.
    const text = `ab${foreign}cd${own}ef`
    for (let size = 1; size <= 30; size++) {
      const scanner = new CanaryScanner(key, own)
      let released = ''
      for (let at = 0; at < text.length; at += size) {
        released += (await scanner.push('reasoning', text.slice(at, at + size))).release
        for (const token of [own, foreign]) {
          for (let n = 1; n <= token.length; n++) {
            expect(released.endsWith(token.slice(0, n)) && n >= 5, `size ${size}`).toBe(false)
          }
        }
      }
      released += (await scanner.end('reasoning')).release
      expect(released).toBe('abcdef')
    }
  })

  it('should report look-alikes and release them unchanged', async () => {
    const lookalike = `cnry_${'7'.repeat(24)}`
    const mutated = own.slice(0, -1) + (own.endsWith('0') ? '1' : '0')
    const text = `see ${lookalike} and ${mutated}!`
    for (const pieces of splits(text)) {
      const { released, findings } = await run(new CanaryScanner(key, own), 'tool:1', pieces)
      expect(released).toBe(text)
      expect(findings).toEqual([
        { kind: 'lookalike', channel: 'tool:1' },
        { kind: 'lookalike', channel: 'tool:1' },
      ])
    }
  })

  it('should not let a look-alike swallow the start of a real foreign canary', async () => {
    const text = `cnry_${'a'.repeat(20)}${foreign} tail`
    const { text: out, findings } = await scanText(key, own, 'content', text)
    // The foreign canary is cut out whole, including the 4 chars the look-alike overlapped.
    expect(out).toBe(`cnry_${'a'.repeat(20)} tail`)
    expect(out.match(CANARY_PATTERN)).toBeNull()
    expect(findings.map((f) => f.kind)).toEqual(['lookalike', 'foreign'])
  })

  it('should hold only a tail that could become a canary, and release it once it cannot', async () => {
    const scanner = new CanaryScanner(key, own)
    expect(await scanner.push('content', 'hello')).toEqual({ release: 'hello', findings: [] })
    expect(scanner.held('content')).toBe(0)
    expect(await scanner.push('content', ' the c')).toEqual({ release: ' the ', findings: [] })
    expect(scanner.held('content')).toBe(1)
    expect(await scanner.push('content', 'NRY_0')).toEqual({ release: '', findings: [] })
    expect(scanner.held('content')).toBe(6)
    expect(await scanner.push('content', 'u')).toEqual({ release: 'cNRY_0u', findings: [] })
    expect(await scanner.push('content', 'cnry')).toEqual({ release: '', findings: [] })
    expect(await scanner.end('content')).toEqual({ release: 'cnry', findings: [] })
    expect(scanner.held('content')).toBe(0)
  })

  it('should keep channels apart: a canary split across two channels is not joined', async () => {
    const scanner = new CanaryScanner(key, own)
    const a = await scanner.push('reasoning', own.slice(0, 10))
    const b = await scanner.push('content', own.slice(10))
    expect(a.release).toBe('')
    expect(b.release).toBe(own.slice(10))
    // What is left on the reasoning channel is a fragment of our own canary: never released.
    expect((await scanner.end('reasoning')).release).toBe('')
  })

  it('should cut a fragment of our own canary that can no longer grow, and keep other cnry_ text', async () => {
    const cutOff = await scanText(key, own, 'content', `quote: ${own.slice(0, 17)}`)
    expect(cutOff.text).toBe('quote: ')
    const midText = await scanText(key, own, 'content', `“${own.slice(0, 12)}” and more`)
    expect(midText.text).toBe('“” and more')
    const unrelated = await scanText(key, own, 'content', 'the prefix cnry_ and cnry_zz9 stay')
    expect(unrelated.text).toBe('the prefix cnry_ and cnry_zz9 stay')
  })

  it('should treat every verifying canary as foreign when there is no own canary', async () => {
    const { text, findings } = await scanText(key, undefined, 'content', `a ${own} b`)
    expect(text).toBe('a  b')
    expect(findings).toEqual([
      expect.objectContaining({ kind: 'foreign', tenantTag: await tenantTag(key, 'acme') }),
    ])
  })

  it('should serialise concurrent pushes in call order', async () => {
    const scanner = new CanaryScanner(key, own)
    const pieces = Array.from(`x${own}y${foreign}z`)
    const results = await Promise.all(pieces.map((p) => scanner.push('content', p)))
    const released = results.map((r) => r.release).join('') + (await scanner.end('content')).release
    expect(released).toBe('xyz')
    expect(results.flatMap((r) => r.findings).map((f) => f.kind)).toEqual(['foreign'])
  })

  it('should reject an own canary that is not canary-shaped', () => {
    expect(() => new CanaryScanner(key, 'not-a-canary')).toThrow(/own/)
  })

  it('should never carry token text in findings', async () => {
    const { findings } = await scanText(key, own, 'content', `${foreign} cnry_${'b'.repeat(24)}`)
    expect(findings).toHaveLength(2)
    expect(JSON.stringify(findings)).not.toMatch(/cnry_/i)
  })
})

describe('scanText', () => {
  it('should strip own, withhold foreign and keep plain text of a whole answer', async () => {
    const text = `${own}\nThe answer is 42. ${foreign}`
    const { text: out, findings } = await scanText(key, own, 'content', text)
    expect(out).toBe('\nThe answer is 42. ')
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatchObject({ kind: 'foreign', tenantTag: globexTag })
  })

  it('should change nothing in a text without canaries, even one ending in a prefix', async () => {
    const text = `Plain answer with ${CANARY_ALPHABET} and a trailing cnry_0ab`
    expect(await scanText(key, own, 'reasoning', text)).toEqual({ text, findings: [] })
  })
})
