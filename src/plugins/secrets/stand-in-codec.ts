/**
 * @module Stand-ins: minted and verified under the guard's secret with HMAC-SHA-256 (WebCrypto), the
 * way src/core/canary/token.ts mints canaries. A stand-in's payload characters (see stand-in-shapes.ts)
 * encode, in mixed radix, one of two layouts:
 * - full (the kind's payload positions hold ≥ 128 bits: every API key, PEM, JWT, URL password):
 *   nonce 32 ‖ tenant tag 40 ‖ counter 16 ‖ MAC 40 bits. The nonce is HMAC(key, "stand-in-request\0"
 *   ‖ requestId), the tag the canary's tenant tag (HMAC(key, "tenant\0" ‖ tenant), so src/core/attribution
 *   resolves it), the counter numbers this request's secrets, and the MAC is HMAC(key,
 *   "stand-in-v1\0" ‖ kind ‖ nonce ‖ tag ‖ counter); the head is XORed with a stream seeded by the
 *   MAC so stand-ins of one request share no visible run. A look-alike verifies with odds 2^-40; a stand-in
 *   of another request names its request (nonce) and tenant (tag), statelessly.
 * - compact (cards, IBANs, national ids, AWS key ids: 16 to 127 bits): an id of ⌊bits/3⌋ bits (8 to
 *   24; derived from the request nonce and a counter) ‖ MAC over kind and id in the rest (11 bits for
 *   an SSN, 31 for a 16-digit card, 56 for an AWS key id). It proves "minted by this guard" only, with odds 2^-MAC for a look-alike.
 * The characters beyond the payload are filled from a PRNG seeded by the MAC (cosmetic: so the
 * stand-in looks as random as the secret; nothing relies on them).
 */
import { constantTimeEqual, hmacOf, importHmacSecret, toHex } from '../../core'
import type { StandInShape } from './stand-in-shapes'

/** An imported stand-in secret (opaque; create with {@link importStandInKey}). */
export interface StandInKey {
  readonly kind: 'stand-in-key'
}

const keys = new WeakMap<StandInKey, CryptoKey>()

/**
 * Import the guard secret (the canary secret: ≥ 32 bytes of UTF-8) as the stand-in HMAC key. Its
 * labels differ from the canary's, except the tenant tag, which is the canary's on purpose.
 *
 * @example
 * const key = await importStandInKey(env.GUARD_SECRET)
 */
export async function importStandInKey(secret: string): Promise<StandInKey> {
  const cryptoKey = await importHmacSecret(secret)
  const handle: StandInKey = Object.freeze({ kind: 'stand-in-key' as const })
  keys.set(handle, cryptoKey)
  return handle
}

/**
 * HMAC-SHA-256 of the parts' concatenation (strings as UTF-8).
 *
 * @example
 * const nonce = (await standInHmac(key, `stand-in-request\0${requestId}`)).slice(0, 4)
 */
export async function standInHmac(
  key: StandInKey,
  ...parts: (string | Uint8Array)[]
): Promise<Uint8Array> {
  const cryptoKey = keys.get(key)
  if (cryptoKey === undefined) throw new Error('not a StandInKey from importStandInKey')
  return await hmacOf(cryptoKey, parts)
}

/** Bits in a full payload. */
const FULL_BITS = 128
/**
 * Below this a kind's stand-in would carry too little to be told from chance: not minted.
 *
 * @example
 * mintStandIn(key, { kind: 'pin', shape, value: '1234' }, fields) // undefined: 13 bits < MIN_PAYLOAD_BITS
 */
export const MIN_PAYLOAD_BITS = 16

/** The payload positions of a template and their radices. */
interface Layout {
  positions: number[]
  radices: number[]
  /** ⌊log2 Π radices⌋ (computed in floating point; at most one less than exact). */
  bits: number
  /** Full layout with room to spare: the last payload position holds an unkeyed check character. */
  check?: number
}

const CLASSES = ['0123456789', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'] as const

function alphabetAt(shape: StandInShape, char: string): string | undefined {
  if (shape.alphabet !== undefined)
    return shape.alphabet.includes(char) ? shape.alphabet : undefined
  return CLASSES.find((c) => c.includes(char))
}

function layoutOf(shape: StandInShape, template: string): Layout {
  const positions: number[] = []
  const radices: number[] = []
  // Bits in floating point (the same sum in mint and inspect, so both choose the same layout): a
  // BigInt product per candidate made the scan of an answer several times slower.
  let log2 = 0
  const end = template.length - shape.keepEnd(template)
  for (let i = shape.keep(template); i < end; i++) {
    const alphabet = alphabetAt(shape, template[i]!)
    if (alphabet === undefined) continue
    positions.push(i)
    radices.push(alphabet.length)
    log2 += Math.log2(alphabet.length)
  }
  const last = radices[radices.length - 1]
  if (last !== undefined && log2 - Math.log2(last) >= FULL_BITS) {
    // A check character costs one position and saves an HMAC (and the decode) for all but one in
    // `radix` look-alikes: an answer full of 40-character tokens cost 1.6 s per MB without it.
    const check = positions.pop()!
    radices.pop()
    return { positions, radices, bits: Math.floor(log2 - Math.log2(last) - 1e-9), check }
  }
  return { positions, radices, bits: Math.floor(log2 - 1e-9) }
}

/** Π radices, exactly (minting only: the fill needs it). */
function capacityOf(layout: Layout): bigint {
  let capacity = 1n
  for (const radix of layout.radices) capacity *= BigInt(radix)
  return capacity
}

/**
 * FNV-1a of the payload characters: the check character's value, unkeyed. Only payload positions,
 * which no fix touches (a fix may depend on the check character, as GitHub's checksum does).
 */
function checkValue(text: string, positions: readonly number[]): number {
  let h = 0x811c9dc5
  for (const i of positions) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** `text` with its check character set (a layout with a check position), before any fix. */
function withCheck(shape: StandInShape, layout: Layout, text: string): string {
  if (layout.check === undefined) return text
  const alphabet = alphabetAt(shape, text[layout.check]!)!
  const char = alphabet[checkValue(text, layout.positions) % alphabet.length]!
  return text.slice(0, layout.check) + char + text.slice(layout.check + 1)
}

/** What a stand-in carries (hex fields), as decoded from it. */
export interface StandInPayload {
  layout: 'full' | 'compact'
  /** Full layout: the minting request's nonce (8 hex) and tenant tag (10 hex). */
  nonce?: string
  tenantTag?: string
  /** The counter (full) or id (compact). */
  id: number
}

/** The fields of one stand-in to mint. */
interface MintFields {
  nonce: Uint8Array
  tag: Uint8Array
  counter: number
}

function toBigInt(bytes: Uint8Array): bigint {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  return n
}

function fromBigInt(n: bigint, length: number): Uint8Array {
  const out = new Uint8Array(length)
  let v = n
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}

/** Compact-layout widths for a payload of `bits`. */
function compactWidths(bits: number): { idBits: number; macBits: number } {
  const idBits = Math.min(24, Math.max(8, Math.floor(bits / 3)))
  return { idBits, macBits: bits - idBits }
}

async function compactMac(
  key: StandInKey,
  kind: string,
  id: number,
  macBits: number,
): Promise<bigint> {
  const digest = toBigInt(await standInHmac(key, `stand-in-v1\0${kind}\0`, String(id)))
  return digest >> BigInt(256 - macBits)
}

async function fullMac(key: StandInKey, kind: string, head: Uint8Array): Promise<Uint8Array> {
  return (await standInHmac(key, `stand-in-v1\0${kind}\0`, head)).slice(0, 5)
}

/** nonce 4 ‖ tag 5 ‖ counter 2 */
function fullHead(fields: MintFields): Uint8Array {
  const head = new Uint8Array(11)
  head.set(fields.nonce.slice(0, 4), 0)
  head.set(fields.tag.slice(0, 5), 4)
  head[9] = (fields.counter >> 8) & 0xff
  head[10] = fields.counter & 0xff
  return head
}

/**
 * The head (nonce ‖ tag ‖ counter) XORed with a stream seeded by the MAC: without it every stand-in
 * of a request would show the same run of characters (its nonce and tag), a pattern a model or a
 * reader would notice. Not secrecy (the head is not secret): the MAC still authenticates the head.
 */
function whiten(head: Uint8Array, mac: Uint8Array): Uint8Array {
  let x = ((mac[0]! << 24) | (mac[1]! << 16) | (mac[2]! << 8) | mac[3]!) >>> 0 || 1
  const out = new Uint8Array(head.length)
  for (let i = 0; i < head.length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = head[i]! ^ (x & 0xff)
  }
  return out
}

/** A small deterministic PRNG (xorshift32) for the cosmetic fill. */
function fill(seed: number, below: bigint): bigint {
  if (below <= 1n) return 0n
  let x = seed >>> 0 || 1
  let n = 0n
  const words = Math.ceil(below.toString(2).length / 32) + 1
  for (let i = 0; i < words; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    n = (n << 32n) | BigInt(x >>> 0)
  }
  return n % below
}

function write(template: string, layout: Layout, shape: StandInShape, value: bigint): string {
  const chars = [...template]
  let v = value
  for (let k = layout.positions.length - 1; k >= 0; k--) {
    const position = layout.positions[k]!
    const radix = BigInt(layout.radices[k]!)
    const alphabet = alphabetAt(shape, template[position]!)!
    chars[position] = alphabet[Number(v % radix)]!
    v /= radix
  }
  const text = withCheck(shape, layout, chars.join(''))
  return shape.fix ? shape.fix(text) : text
}

function read(text: string, layout: Layout, shape: StandInShape): bigint {
  let v = 0n
  for (let k = 0; k < layout.positions.length; k++) {
    const position = layout.positions[k]!
    const alphabet = alphabetAt(shape, text[position]!)!
    v = v * BigInt(layout.radices[k]!) + BigInt(alphabet.indexOf(text[position]!))
  }
  return v
}

/**
 * The stand-in of `value` (a secret of `kind`) for one request and counter, with the payload it
 * carries, or undefined when the kind's shape leaves fewer than {@link MIN_PAYLOAD_BITS} bits.
 *
 * @example
 * const secret = { kind: 'github-token', shape: SHAPES['github-token'], value: token }
 * const minted = await mintStandIn(key, secret, fields)
 */
export async function mintStandIn(
  key: StandInKey,
  { kind, shape, value }: { kind: string; shape: StandInShape; value: string },
  fields: MintFields,
): Promise<{ text: string; payload: StandInPayload } | undefined> {
  const template = shape.template(value)
  const layout = layoutOf(shape, template)
  if (layout.bits < MIN_PAYLOAD_BITS) return undefined
  let payload: bigint
  let payloadBits: number
  let fieldsOut: StandInPayload
  if (layout.bits >= FULL_BITS) {
    const head = fullHead(fields)
    const mac = await fullMac(key, kind, head)
    payload = (toBigInt(whiten(head, mac)) << 40n) | toBigInt(mac)
    payloadBits = FULL_BITS
    fieldsOut = {
      layout: 'full',
      nonce: toHex(head.slice(0, 4)),
      tenantTag: toHex(head.slice(4, 9)),
      id: fields.counter,
    }
  } else {
    const { idBits, macBits } = compactWidths(layout.bits)
    const seed = await standInHmac(key, 'stand-in-id\0', fields.nonce, `${kind}\0${fields.counter}`)
    const id = Number(toBigInt(seed.slice(0, 4)) >> BigInt(32 - idBits))
    payload = (BigInt(id) << BigInt(macBits)) | (await compactMac(key, kind, id, macBits))
    payloadBits = layout.bits
    fieldsOut = { layout: 'compact', id }
  }
  const unit = 1n << BigInt(payloadBits)
  const seed = Number(payload & 0xffffffffn)
  const encoded = payload + unit * fill(seed, capacityOf(layout) / unit)
  return { text: write(template, layout, shape, encoded), payload: fieldsOut }
}

/**
 * Whether `candidate` is a stand-in of `kind` minted under `key` (any request); its payload if so.
 * The MAC is compared in constant time; look-alikes answer undefined and never throw.
 *
 * @example
 * const found = await inspectStandIn(key, 'card-number', SHAPES['card-number'], '4…')
 */
export async function inspectStandIn(
  key: StandInKey,
  kind: string,
  shape: StandInShape,
  candidate: string,
): Promise<StandInPayload | undefined> {
  if (shape.fix && shape.fix(candidate) !== candidate) return undefined
  const layout = layoutOf(shape, candidate)
  if (layout.bits < MIN_PAYLOAD_BITS) return undefined
  if (withCheck(shape, layout, candidate) !== candidate) return undefined
  const n = read(candidate, layout, shape)
  if (layout.bits >= FULL_BITS) {
    const payload = fromBigInt(n % (1n << 128n), 16)
    const mac = payload.slice(11)
    const head = whiten(payload.slice(0, 11), mac)
    if (!constantTimeEqual(mac, await fullMac(key, kind, head))) return undefined
    return {
      layout: 'full',
      nonce: toHex(head.slice(0, 4)),
      tenantTag: toHex(head.slice(4, 9)),
      id: (head[9]! << 8) | head[10]!,
    }
  }
  const { macBits } = compactWidths(layout.bits)
  const payload = n % (1n << BigInt(layout.bits))
  const id = Number(payload >> BigInt(macBits))
  const mac = payload & ((1n << BigInt(macBits)) - 1n)
  const expected = await compactMac(key, kind, id, macBits)
  if (!constantTimeEqual(mac.toString(16), expected.toString(16))) return undefined
  return { layout: 'compact', id }
}
