import { encode } from 'gpt-tokenizer/encoding/o200k_base'
import { beforeAll, describe, expect, it } from 'vitest'
import { prng } from '../../sim/random'
import {
  CANARY_ALPHABET,
  CANARY_LENGTH,
  CANARY_PATTERN,
  CANARY_PREFIX,
  type CanaryKey,
  importCanaryKey,
  inspectCanary,
  mintCanary,
  tenantTag,
} from '../../src/core/canary'
import { keyFingerprint } from '../../src/core/canary/token'

const SECRET = 'test-secret-0123456789abcdef-0123456789'
const OTHER_SECRET = 'another-secret-0123456789abcdef-01234567'

function matches(text: string): string[] {
  return Array.from(text.matchAll(CANARY_PATTERN), (m) => m[0])
}

let key: CanaryKey
let canary: string

beforeAll(async () => {
  key = await importCanaryKey(SECRET)
  canary = await mintCanary(key, { requestId: 'req-1', tenant: 'acme' })
})

describe('importCanaryKey', () => {
  it('should throw a plain Error naming secret when it is shorter than 32 bytes', async () => {
    await expect(importCanaryKey('x'.repeat(31))).rejects.toThrow(/secret/)
    await expect(importCanaryKey('')).rejects.toThrow(/secret/)
    await expect(importCanaryKey('x'.repeat(31))).rejects.not.toHaveProperty('code')
  })

  it('should accept 32 bytes, counted in UTF-8 not in characters', async () => {
    await expect(importCanaryKey('x'.repeat(32))).resolves.toHaveProperty('kind', 'canary-key')
    await expect(importCanaryKey('\u20ac'.repeat(11))).resolves.toBeDefined() // 33 bytes
    await expect(importCanaryKey('\u20ac'.repeat(10))).rejects.toThrow(/secret/) // 30 bytes
  })

  it('should not expose the secret on the key handle', async () => {
    const k = await importCanaryKey(SECRET)
    expect(JSON.stringify(k)).not.toContain('test-secret')
    expect(Object.isFrozen(k)).toBe(true)
  })
})

describe('mintCanary', () => {
  it('should mint prefix + 24 lowercase Crockford base32 chars', () => {
    expect(canary).toHaveLength(CANARY_LENGTH)
    expect(canary.startsWith(CANARY_PREFIX)).toBe(true)
    for (const char of canary.slice(5)) expect(CANARY_ALPHABET).toContain(char)
    expect(matches(canary)).toEqual([canary])
  })

  it('should be deterministic in key, request id and tenant', async () => {
    expect(await mintCanary(key, { requestId: 'req-1', tenant: 'acme' })).toBe(canary)
    const others = [
      await mintCanary(key, { requestId: 'req-2', tenant: 'acme' }),
      await mintCanary(key, { requestId: 'req-1', tenant: 'globex' }),
      await mintCanary(await importCanaryKey(OTHER_SECRET), { requestId: 'req-1', tenant: 'acme' }),
    ]
    for (const other of others) expect(other).not.toBe(canary)
  })

  it('should bind the nonce to the request id and the tag to the tenant', async () => {
    const same = await mintCanary(key, { requestId: 'req-1', tenant: 'globex' })
    expect(same.slice(5, 11)).toBe(canary.slice(5, 11)) // first 30 of the nonce's 32 bits
    const info = await inspectCanary(key, same)
    const own = await inspectCanary(key, canary)
    expect(info.ours && own.ours && info.nonce === own.nonce).toBe(true)
  })
})

describe('inspectCanary', () => {
  it('should verify its own canary with its tenant tag and nonce, in any case', async () => {
    const tag = await tenantTag(key, 'acme')
    expect(tag).toMatch(/^[0-9a-f]{10}$/) // 40 bits
    for (const token of [canary, canary.toUpperCase()]) {
      const info = await inspectCanary(key, token)
      expect(info).toEqual({
        ours: true,
        tenantTag: tag,
        nonce: expect.stringMatching(/^[0-9a-f]{8}$/), // 32 bits
      })
    }
  })

  it("should verify another tenant's canary as ours with that tenant's tag", async () => {
    const foreign = await mintCanary(key, { requestId: 'req-9', tenant: 'globex' })
    const info = await inspectCanary(key, foreign)
    expect(info.ours).toBe(true)
    expect(info.ours && info.tenantTag).toBe(await tenantTag(key, 'globex'))
    expect(info.ours && info.tenantTag).not.toBe(await tenantTag(key, 'acme'))
  })

  it('should reject a canary minted under another key', async () => {
    const stranger = await mintCanary(await importCanaryKey(OTHER_SECRET), {
      requestId: 'req-1',
      tenant: 'acme',
    })
    expect(await inspectCanary(key, stranger)).toEqual({ ours: false })
  })

  it('should reject every 1-char mutation of a real canary', async () => {
    for (let i = 5; i < CANARY_LENGTH; i++) {
      for (const char of CANARY_ALPHABET) {
        if (char === canary[i]) continue
        const mutated = canary.slice(0, i) + char + canary.slice(i + 1)
        expect(await inspectCanary(key, mutated), mutated).toEqual({ ours: false })
      }
    }
  })

  it('should reject random look-alikes', async () => {
    const random = prng(7)
    for (let n = 0; n < 300; n++) {
      let body = ''
      for (let i = 0; i < 24; i++) body += CANARY_ALPHABET[Math.floor(random() * 32)]
      expect(await inspectCanary(key, CANARY_PREFIX + body)).toEqual({ ours: false })
    }
  })

  it('should answer ours: false, never throw, on malformed tokens', async () => {
    const bad = [
      '',
      'cnry_',
      canary.slice(0, -1),
      `${canary}0`,
      ` ${canary}`,
      `cnry_${'i'.repeat(24)}`,
    ]
    for (const token of bad) expect(await inspectCanary(key, token)).toEqual({ ours: false })
  })
})

/** A canary of the v1 layout (nonce 5 ‖ tag 3 ‖ MAC 7), minted here from the raw secret. */
async function mintV1(secret: string, requestId: string, tenant: string): Promise<string> {
  const raw = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  )
  const mac = async (...parts: (string | Uint8Array)[]) => {
    const bytes = parts.map((p) => (typeof p === 'string' ? new TextEncoder().encode(p) : p))
    const message = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0))
    let at = 0
    for (const b of bytes) {
      message.set(b, at)
      at += b.length
    }
    return new Uint8Array(await crypto.subtle.sign('HMAC', raw, message))
  }
  const nonce = (await mac(`request\0${requestId}`)).slice(0, 5)
  const tag = (await mac(`tenant\0${tenant}`)).slice(0, 3)
  const body = new Uint8Array(15)
  body.set(nonce, 0)
  body.set(tag, 5)
  body.set((await mac(new TextEncoder().encode('canary\0'), nonce, tag)).slice(0, 7), 8)
  let bits = 0
  let buffer = 0
  let out = ''
  for (const byte of body) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      bits -= 5
      out += CANARY_ALPHABET[(buffer >> bits) & 31]
    }
    buffer &= (1 << bits) - 1
  }
  return CANARY_PREFIX + out
}

describe('canary layout', () => {
  it('should carry a 40-bit tenant tag: the first 5 bytes of the tenant digest', async () => {
    // Tags of 2,000 tenants: all distinct (a 24-bit tag would already collide with odds 11%).
    const tags = new Set<string>()
    for (let i = 0; i < 2000; i++) tags.add(await tenantTag(key, `tenant-${i}`))
    expect(tags.size).toBe(2000)
    for (const tag of tags) expect(tag).toMatch(/^[0-9a-f]{10}$/)
  })

  it('should still verify a canary of the v1 layout, with its 24-bit tag', async () => {
    const old = await mintV1(SECRET, 'req-old', 'acme')
    expect(old).toMatch(new RegExp(`^${CANARY_PATTERN.source}$`))
    const info = await inspectCanary(key, old)
    expect(info.ours).toBe(true)
    // v1 tags are the first 3 bytes of the same digest: a prefix of the tenant's v2 tag.
    expect(info.ours && info.tenantTag).toBe((await tenantTag(key, 'acme')).slice(0, 6))
    expect(info.ours && info.nonce).toMatch(/^[0-9a-f]{10}$/)
    // ...and only under its own key.
    const stranger = await mintV1(OTHER_SECRET, 'req-old', 'acme')
    expect(await inspectCanary(key, stranger)).toEqual({ ours: false })
  })

  it('should name a key by a fingerprint that does not depend on tenants and differs per secret', async () => {
    const a = await keyFingerprint(key)
    expect(a).toMatch(/^[0-9a-f]{16}$/)
    expect(await keyFingerprint(await importCanaryKey(SECRET))).toBe(a)
    expect(await keyFingerprint(await importCanaryKey(OTHER_SECRET))).not.toBe(a)
  })
})

describe('CANARY_PATTERN', () => {
  it('should match a canary glued to text, in any case, and each of several', async () => {
    const second = await mintCanary(key, { requestId: 'req-2', tenant: 'acme' })
    const text = `x${canary}y and ${second.toUpperCase()}.`
    expect(matches(text)).toEqual([canary, second.toUpperCase()])
  })

  it('should not match near misses or normal text', () => {
    const texts = [
      `cnry_${'a'.repeat(23)}`,
      `cnry-${'a'.repeat(24)}`,
      `cnry_${'u'.repeat(24)}`,
      'The canary (cnry) sang; cnry_ is our prefix.',
      'sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      'uuid 123e4567-e89b-12d3-a456-426614174000, base64 aGVsbG8gd29ybGQ=',
      'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.',
    ]
    for (const text of texts) expect(matches(text), text).toEqual([])
  })
})

describe('canary token cost', () => {
  it('should cost 13 to 24 o200k tokens, about 18.4 on average (as the module doc states)', async () => {
    const counts: number[] = []
    for (let i = 0; i < 5000; i++) {
      const c = await mintCanary(key, { requestId: `r${i}`, tenant: `t${i % 7}` })
      counts.push(encode(c).length)
    }
    const mean = counts.reduce((a, b) => a + b, 0) / counts.length
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(12)
    expect(Math.max(...counts)).toBeLessThanOrEqual(25)
    expect(mean).toBeGreaterThan(17.5)
    expect(mean).toBeLessThan(19.5)
  })
})
