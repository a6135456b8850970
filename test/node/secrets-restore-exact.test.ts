/**
 * @module A secret comes back as itself, never as another value. Substitution is
 * one pass over each original text — no stand-in the book issued is a candidate again, whole or in
 * part — and restoration is exact at any nesting: tool-call arguments (their JSON text and the
 * strings inside it), JSON-mode content, content parts, CSV. Before, an IBAN's stand-in in tool-call
 * arguments could hold a Luhn-valid 16-digit run in a card range; the pass over the decoded strings
 * replaced that run with a card's stand-in, and restoration undid one level: the client got the
 * IBAN's stand-in, a different IBAN (1–2% of Spanish IBANs).
 */
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  importStandInKey,
  resolveSecrets,
  type StandInBook,
  type StandInKey,
} from '../../src/plugins/secrets'
import { type SecretServices, substituteSecrets } from '../../src/plugins/secrets/prompt-secrets'
import { GENERATORS, rng } from '../secrets/generate'
import { printed, publishedIban } from '../secrets/published'
import { restoredAsWhole } from '../support/secrets'

let key: StandInKey

beforeAll(async () => {
  key = await importStandInKey('a test secret of at least thirty-two bytes')
})

const services = (): SecretServices => ({
  secrets: resolveSecrets({ high: 'substitute', medium: 'substitute' }),
  standInKey: async () => key,
})

type Message = Record<string, unknown>

/** A call of an assistant turn with `args` as its arguments text. */
const callTurn = (args: string): Message => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'pay', arguments: args } }],
})

function argumentsOf(message: unknown): string {
  const calls = (message as { tool_calls: { function: { arguments: string } }[] }).tool_calls
  return calls[0]!.function.arguments
}

/**
 * What a client gets back when the model answers with `text` exactly as it was sent: this request's
 * stand-ins replaced by their values, escaped for a JSON channel (tool-call arguments, JSON mode) as
 * the whole-answer stage does (src/plugins/secrets/stand-in-evidence.ts).
 */
async function answered(book: StandInBook, text: string, json: boolean): Promise<string> {
  const { text: whole, foreign } = await restoredAsWhole(book, text, json)
  expect(foreign).toBe(0)
  return whole
}

describe('exact restoration', () => {
  // Failed before: 26 of 2,000 Spanish IBANs in print format came back as another IBAN.
  it('should return every Spanish IBAN in tool-call arguments as itself', async () => {
    let wrong = 0
    for (let i = 0; i < 2000; i++) {
      const r = rng(4500 + i)
      const iban = publishedIban(r, 'ES')
      const value = r() < 0.7 ? printed(iban) : iban
      const args = JSON.stringify({ beneficiary: 'Ana', iban: value, note: `pay ${value}` })
      const request = { requestId: `req-${i}`, tenant: 'acme', model: 'm' }
      const { inputs, secrets } = await substituteSecrets(services(), request, {
        messages: [callTurn(args)],
      })
      const sent = argumentsOf((inputs.messages as unknown[])[0])
      expect(sent).not.toContain(value)
      if ((await answered(secrets!.book, sent, true)) !== args) wrong++
    }
    expect(wrong).toBe(0)
  })

  const KINDS = [
    'card-number',
    'iban',
    'no-fodselsnummer',
    'github-token',
    'aws-access-key-id',
    'openai-key',
    'stripe-key',
    'jwt',
    'private-key',
    'google-api-key',
    'slack-token',
  ]

  /** A value of a kind: generated, or a Spanish IBAN from its registry format (the case above). */
  const secret = fc
    .tuple(fc.constantFrom(...KINDS, 'es-iban', 'url-password'), fc.nat())
    .map(([name, seed]) => {
      const r = rng(seed + 1)
      if (name === 'es-iban') return printed(publishedIban(r, 'ES'))
      const { value } = GENERATORS[name]!(r)
      return name === 'url-password' ? `postgres://app:${value}@db.internal/app` : value
    })

  it('should restore every text exactly, mixing kinds in tool calls, JSON and CSV (property)', async () => {
    let wrong = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(secret, { minLength: 2, maxLength: 8 }),
        fc.nat(),
        async (values, n) => {
          const csv = `id,name,value\n${values.map((v, i) => `${i},Kari,${v}`).join('\n')}\n`
          const tsv = values.map((v, i) => `${i}\t${v}`).join('\r\n')
          // Arguments nest: CSV text in a string (its newlines escaped), values in objects and
          // arrays, a value used as a key, and an arguments text inside the arguments.
          const nested = {
            rows: csv,
            accounts: values.map((v) => ({ value: v, seen: n })),
            [values[0]!]: 'as a key',
            inner: JSON.stringify({ again: values[n % values.length] }),
          }
          const args = JSON.stringify(nested, null, n % 2 === 0 ? 0 : 2)
          const jsonMode = JSON.stringify({ table: tsv, first: values[0] })
          const messages: Message[] = [
            { role: 'user', content: csv },
            { role: 'user', content: [{ type: 'text', text: tsv }] },
            callTurn(args),
            { role: 'tool', tool_call_id: 'call_1', content: jsonMode },
          ]
          const request = { requestId: `req-${n}`, tenant: 'acme', model: 'm' }
          const { inputs, secrets } = await substituteSecrets(services(), request, { messages })
          const book = secrets!.book
          const out = inputs.messages as Message[]
          const texts = [
            out[0]!.content as string,
            (out[1]!.content as { text: string }[])[0]!.text,
            argumentsOf(out[2]),
            out[3]!.content as string,
          ]
          for (const text of texts) {
            for (const v of values) expect(text.includes(v), `${v} sent in ${text}`).toBe(false)
          }
          const back = [
            await answered(book, texts[0]!, false),
            await answered(book, texts[1]!, false),
            await answered(book, texts[2]!, true),
            await answered(book, texts[3]!, true),
          ]
          const expected = [csv, tsv, args, jsonMode]
          for (let i = 0; i < 4; i++) {
            // The JSON channels compare by value: arguments re-encoded after a decoded pass keep
            // their values, not their spacing.
            const same =
              i < 2
                ? back[i] === expected[i]
                : JSON.stringify(JSON.parse(back[i]!)) === JSON.stringify(JSON.parse(expected[i]!))
            if (!same) wrong++
          }
          expect(wrong).toBe(0)
        },
      ),
      { numRuns: 300, seed: 45 },
    )
    expect(wrong).toBe(0)
  })
})
