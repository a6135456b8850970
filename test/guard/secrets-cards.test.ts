/**
 * @module 13-digit card numbers printed 4-3-3-3 (`4222 222 222 222`): substituted like every other
 * card, whole and streamed — the engine gets a stand-in, the client the number back — while a
 * 13-digit run in the same layout that fails Luhn is no card and goes to the engine as written.
 */
import { describe, expect, it } from 'vitest'
import { chat } from '../support/prompts'
import {
  channelsOf,
  MODEL,
  models,
  ownCanary,
  SECRET,
  SUBSTITUTE_ALL,
  scripted,
  userTextOf,
} from '../support/secrets'
import { direct } from '../support/surfaces'
import { recordVerdicts } from '../support/verdicts'

/** Luhn-valid 13-digit Visa numbers, each in the 4-3-3-3 layout with spaces or dashes. */
const CARDS = ['4222 222 222 222', '4222-222-222-222', '4000 000 000 006']
/** The same layout failing Luhn (one digit off): not a card. */
const NOT_CARDS = ['4222 222 222 223', '4000-000-000-007']

/** An engine that quotes the user's text after its echo, whole or streamed. */
const quoting = (stream: boolean) =>
  scripted((inputs) => {
    const content = `${ownCanary(inputs)}\nYou wrote: ${userTextOf(inputs)}`
    return stream ? { deltas: [{ content }] } : { message: { content } }
  })

describe('13-digit card numbers grouped 4-3-3-3', () => {
  for (const stream of [false, true]) {
    it(`should substitute a Luhn-valid one and give the client it back (${stream ? 'stream' : 'whole'})`, async () => {
      for (const card of CARDS) {
        const verdicts = recordVerdicts()
        const upstream = quoting(stream)
        const send = direct(upstream, {
          secret: SECRET,
          models,
          secrets: SUBSTITUTE_ALL,
          hooks: { onVerdict: verdicts.onVerdict },
        })
        const text = `Please charge card ${card} exp 09/29 for the order.`
        const got = await send('tenant-a', MODEL, chat(text, { stream }))
        expect(got.status, card).toBe(200)
        // The engine never saw the number, in any layout.
        const sent = userTextOf(upstream.sent[0]!)
        expect(sent, card).not.toContain(card)
        expect(sent.replace(/[ -]/g, ''), card).not.toContain(card.replace(/[ -]/g, ''))
        expect(sent).toMatch(/Please charge card 4\d{3}[ -]\d{3}[ -]\d{3}[ -]\d{3} exp/)
        // The client got it back where the model quoted its stand-in.
        expect(channelsOf(got.body).content, card).toBe(`You wrote: ${text}`)
        expect(verdicts.events.at(-1)?.secrets?.substituted).toEqual({ 'card-number': 1 })
      }
    })
  }

  it('should leave a 4-3-3-3 number that fails Luhn as it is', async () => {
    for (const number of NOT_CARDS) {
      const verdicts = recordVerdicts()
      const upstream = quoting(false)
      const send = direct(upstream, {
        secret: SECRET,
        models,
        secrets: SUBSTITUTE_ALL,
        hooks: { onVerdict: verdicts.onVerdict },
      })
      const text = `Reference ${number} for the order.`
      const got = await send('tenant-a', MODEL, chat(text))
      expect(got.status).toBe(200)
      expect(userTextOf(upstream.sent[0]!), number).toBe(text)
      expect(channelsOf(got.body).content).toBe(`You wrote: ${text}`)
      expect(verdicts.events.at(-1)?.secrets).toBeUndefined()
    }
  })
})
