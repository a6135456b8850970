/**
 * @module Detectors of checksummed personal and account identifiers: payment card numbers (Luhn, the
 * issuer ranges, the lengths each brand issues, the groupings people write), IBANs (the country's
 * length, ISO 7064 mod-97), Norwegian fødselsnummer (a real date, D- and H-numbers included, both
 * mod-11 digits), Swedish personnummer (a real date, Luhn) and US social security numbers (the
 * SSA's structure rules only: no check digit exists, so medium).
 */
import { fnrControl, ibanRemainder, luhnValid } from './checksums'
import {
  CARD_DIGITS,
  NATIONAL_START,
  NUMBER_END,
  NUMBER_START,
  regexDetector,
  type SecretDetector,
  tokenStart,
} from './detector'

/** Card issuer ranges: [low prefix, high prefix, lengths issued]. Prefixes compare as numbers of equal width. */
const IIN: readonly [string, string, readonly number[]][] = [
  ['4', '4', [13, 16, 19]], // Visa
  ['51', '55', [16]], // Mastercard
  ['2221', '2720', [16]], // Mastercard 2-series
  ['34', '34', [15]], // American Express
  ['37', '37', [15]],
  ['6011', '6011', [16, 17, 18, 19]], // Discover
  ['644', '649', [16, 17, 18, 19]],
  ['65', '65', [16, 17, 18, 19]],
  ['3528', '3589', [16, 17, 18, 19]], // JCB
  ['300', '305', [14, 15, 16, 17, 18, 19]], // Diners Club
  ['36', '36', [14, 15, 16, 17, 18, 19]],
  ['38', '39', [16, 17, 18, 19]],
  ['62', '62', [16, 17, 18, 19]], // UnionPay
  ['2200', '2204', [16, 17, 18, 19]], // Mir
  ['5018', '5018', [13, 14, 15, 16, 17, 18, 19]], // Maestro
  ['5020', '5020', [13, 14, 15, 16, 17, 18, 19]],
  ['5038', '5038', [13, 14, 15, 16, 17, 18, 19]],
  ['5893', '5893', [13, 14, 15, 16, 17, 18, 19]],
  ['6304', '6304', [13, 14, 15, 16, 17, 18, 19]],
  ['6759', '6759', [13, 14, 15, 16, 17, 18, 19]],
  ['6761', '6763', [13, 14, 15, 16, 17, 18, 19]],
]

/**
 * Whether a digit string starts in a known issuer range with a length that issuer uses.
 *
 * @example
 * knownIssuer('4242424242424242') // true (Visa, 16)
 */
export function knownIssuer(digits: string): boolean {
  for (const [low, high, lengths] of IIN) {
    const prefix = digits.slice(0, low.length)
    if (prefix >= low && prefix <= high && lengths.includes(digits.length)) return true
  }
  return false
}

/**
 * Payment card numbers: 13–19 digits, plain or grouped the ways people write them (fours with the
 * last group shorter; Amex 4-6-5, Diners 4-6-4, 13 digits 4-3-3-3) with one kind of separator (space or dash), in a
 * known issuer range with a length it issues, passing Luhn. The groupings are in the regex, so a
 * run of digits and separators that no one writes (`1 2 3 4 …`) is not even a candidate.
 */
const card = regexDetector(
  'card-number',
  'high',
  new RegExp(`${NUMBER_START}${CARD_DIGITS}${NUMBER_END}`, 'g'),
  (m) => {
    if (m[1] !== undefined && /[ -][0-9]{1,3}[ -]/.test(m[0])) return false // a short inner group
    const digits = m[0].replace(/[ -]/g, '')
    if (knownIssuer(digits) && luhnValid(digits)) return true
    // Grouped by spaces, the pattern takes a short group of digits written after the card
    // (`… 4242 09/29`, `… 4242 123`): the card is what is left without it. A full group of four
    // after it is not dropped: that is one longer number grouped in fours, not a card.
    const cut = m[0].lastIndexOf(' ')
    if (m[1] !== ' ' || m[0].length - cut - 1 > 3) return false
    const card = digits.slice(0, digits.length - (m[0].length - cut - 1))
    return knownIssuer(card) && luhnValid(card) && m.index + cut
  },
)

/** IBAN length per country (SWIFT's IBAN registry). */
export const IBAN_LENGTHS: Record<string, number> = Object.fromEntries(
  (
    'AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DK18 DO28 EE20 ' +
    'EG29 ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 ' +
    'KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 MC27 MD24 ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 ' +
    'PS29 PT25 QA29 RO24 RS22 SA24 SC31 SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20'
  )
    .split(' ')
    .map((entry) => [entry.slice(0, 2), Number(entry.slice(2))]),
)

/**
 * The end of an IBAN starting at `start` in `text` (electronic form, or printed in groups of four
 * separated by single spaces), or -1: its length is the country's exactly.
 */
function ibanEnd(text: string, start: number, length: number): number {
  let count = 0
  let i = start
  while (i < text.length && count < length) {
    const c = text[i]!
    if (c === ' ') {
      if (count % 4 !== 0 || count === 0 || text[i - 1] === ' ') return -1
    } else if (/[A-Z0-9]/.test(c)) {
      count++
    } else {
      return -1
    }
    i++
  }
  if (count < length || (i < text.length && /[A-Za-z0-9]/.test(text[i]!))) return -1
  return i
}

/** IBANs: a known country, its exact length, mod-97 = 1 (upper case, electronic or printed form). */
const iban = regexDetector(
  'iban',
  'high',
  new RegExp(`${tokenStart()}[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}`, 'g'),
  (m, text) => {
    const length = IBAN_LENGTHS[m[0].slice(0, 2)]
    if (length === undefined) return false
    const end = ibanEnd(text, m.index, length)
    if (end === -1 || ibanRemainder(text.slice(m.index, end)) !== 1) return false
    return end
  },
)

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}

/** Whether day/month/year is a real date (month 1–12, day within the month). */
function realDate(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month)
}

/**
 * Whether 11 digits are a valid fødselsnummer: a real birth date (day + 40 for D-numbers, month + 40
 * for H-numbers), a century from the individual number, both mod-11 control digits.
 *
 * @example
 * validFodselsnummer(generated) // true for a number with both control digits right
 */
export function validFodselsnummer(digits: string): boolean {
  if (!/^[0-9]{11}$/.test(digits)) return false
  let day = Number(digits.slice(0, 2))
  let month = Number(digits.slice(2, 4))
  const yy = Number(digits.slice(4, 6))
  const individual = Number(digits.slice(6, 9))
  if (day > 40) day -= 40
  if (month > 40) month -= 40
  let century: number
  if (individual <= 499) century = 1900
  else if (individual <= 749 && yy >= 54) century = 1800
  else if (individual >= 500 && yy <= 39) century = 2000
  else if (individual >= 900 && yy >= 40) century = 1900
  else return false
  if (!realDate(century + yy, month, day)) return false
  const k1 = fnrControl(digits, 'k1')
  if (k1 === 10 || k1 !== Number(digits[9])) return false
  const k2 = fnrControl(digits, 'k2')
  return k2 !== 10 && k2 === Number(digits[10])
}

/** Norwegian national identity numbers: 11 digits (or 6 + space + 5) that validate. */
const fodselsnummer = regexDetector(
  'no-fodselsnummer',
  'high',
  new RegExp(`${NATIONAL_START}[0-9]{6} ?[0-9]{5}${NUMBER_END}`, 'g'),
  (m) => validFodselsnummer(m[0].replace(' ', '')),
)

/**
 * Whether a Swedish personnummer (`YYMMDD-NNNC`, `YYMMDD+NNNC` for 100+, or `YYYYMMDD-NNNC`) has a
 * real date (day + 60 for samordningsnummer) and a valid Luhn digit over its 10-digit form.
 *
 * @example
 * validPersonnummer('811218-9876') // true
 */
export function validPersonnummer(text: string): boolean {
  const digits = text.replace(/[-+]/g, '')
  const ten = digits.length === 12 ? digits.slice(2) : digits
  if (!/^[0-9]{10}$/.test(ten)) return false
  const yy = Number(ten.slice(0, 2))
  const month = Number(ten.slice(2, 4))
  let day = Number(ten.slice(4, 6))
  if (day > 60) day -= 60
  const year = digits.length === 12 ? Number(digits.slice(0, 4)) : 2000 + yy
  return realDate(year, month, day) && luhnValid(ten)
}

/**
 * Swedish personnummer with a separator, or in 12 digits from 19xx/20xx: Luhn catches 9 in 10 random
 * numbers and the date a further share, so medium.
 */
const personnummer = regexDetector(
  'se-personnummer',
  'medium',
  new RegExp(`${NATIONAL_START}(?:(?:19|20)[0-9]{6}-?|[0-9]{6}[-+])[0-9]{4}${NUMBER_END}`, 'g'),
  (m) => validPersonnummer(m[0]),
)

/** Numbers the SSA never issues or published as examples (advertising, the Woolworth card). */
const SSN_EXAMPLES = new Set(['078-05-1120', '219-09-9999', '123-45-6789', '111-11-1111'])

/**
 * US social security numbers written `AAA-GG-SSSS`: area not 000, 666 or 900–999, group not 00,
 * serial not 0000. No check digit exists, so many 9-digit dashed numbers pass: medium.
 */
const ssn = regexDetector(
  'us-ssn',
  'medium',
  new RegExp(`${NUMBER_START}[0-8][0-9]{2}-[0-9]{2}-[0-9]{4}${NUMBER_END}`, 'g'),
  (m) => {
    const [area, group, serial] = m[0].split('-') as [string, string, string]
    return (
      area !== '000' &&
      area !== '666' &&
      group !== '00' &&
      serial !== '0000' &&
      !SSN_EXAMPLES.has(m[0])
    )
  },
)

/**
 * The identifier detectors: cards, IBANs, fødselsnummer, personnummer, SSNs.
 *
 * @example
 * findSecrets(text, identifierDetectors())
 */
export function identifierDetectors(): SecretDetector[] {
  return [card, iban, fodselsnummer, personnummer, ssn]
}
