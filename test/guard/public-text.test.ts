/// <reference types="vite/client" />
/**
 * @module The guard's built-in public texts: the UDHR in 31 languages and one licence of every kind in
 * node_modules. A model reciting one of them to a tenant is released though exactly one other tenant
 * pasted it within the hour (test/guard/honest-traffic.test.ts withheld 26 of 2,004 honest answers
 * for the UDHR, 1 for CC0, 1 for Apache as TypeScript ships it, before they were built in); that
 * tenant's own words beside them are still its evidence; a translation left out is still withheld.
 */
import { describe, expect, it } from 'vitest'
import { createGuard, GuardError } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { udhrLines } from '../support/honest-corpus'
import { directiveCanary } from '../support/prompts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'public-text-test-secret-0123456789abcdef'

const FILES = import.meta.glob<string>(
  [
    '../../node_modules/@speed-highlight/core/LICENSE',
    '../../node_modules/graceful-fs/LICENSE.md',
    '../../node_modules/lightningcss/LICENSE',
    '../../node_modules/typescript/LICENSE',
    '../../node_modules/sharp/LICENSE',
  ],
  { query: '?raw', import: 'default', eager: true },
)
const file = (path: string) => FILES[`../../node_modules/${path}`]!.replace(/\r\n/g, '\n')

/** A's private words: a ticket of its own. */
const PRIVATE =
  'Ticket ACM-448213 opened by Jana Novak for account 73019284: the Rotterdam warehouse ' +
  'migration slips to March because the Kessler contract renewal is still unsigned, and the ' +
  'penalty clause of 41,000 euros applies from the first of April unless Pieter signs.'

/** A pastes `pasted` with its own question; then B's model recites `recited`: released or withheld. */
async function recite(pasted: string, recited: string): Promise<string | GuardError> {
  const guard = createGuard({ secret: SECRET })
  const answering = (text: string): AiRunner => ({
    run: async (_model, inputs) => ({ response: `${directiveCanary(inputs)}\n${text}` }),
  })
  const a = guard.wrap(answering('Noted.'), { tenant: 'tenant-a' })
  await a.run(MODEL, { messages: [{ role: 'user', content: `What does this say?\n${pasted}` }] })
  const b = guard.wrap(answering(`Certainly! Here it is:\n\n${recited}`), { tenant: 'tenant-b' })
  return b.run(MODEL, { messages: [{ role: 'user', content: 'Quote it for me, please.' }] }).then(
    (out) => (out as { response: string }).response,
    (error: unknown) => {
      if (error instanceof GuardError) return error
      throw error
    },
  )
}

describe('public texts built in', () => {
  it('should release the UDHR recited in a language built in, though one tenant pasted it', async () => {
    for (const code of ['rus', 'cmn_hans', 'arb', 'hin'] as const) {
      // An article the model knows by heart, one that A pasted among others.
      const lines = udhrLines(code)
      const pasted = lines.slice(8, 14).join('\n')
      const article = lines.slice(9, 13).reduce((a, b) => (b.length > a.length ? b : a))
      expect(await recite(pasted, article), code).toContain('Here it is')
      // A's own words beside the article are A's: withheld.
      const leak = `${article}\n${PRIVATE}`
      expect(await recite(`${pasted}\n${PRIVATE}`, leak), code).toBeInstanceOf(GuardError)
    }
  }, 60_000)

  it('should still withhold a translation left out (the limit: Bulgarian)', async () => {
    const lines = udhrLines('bul')
    const article = lines.slice(9, 13).reduce((a, b) => (b.length > a.length ? b : a))
    const found = await recite(lines.slice(8, 14).join('\n'), article)
    expect(found).toBeInstanceOf(GuardError)
  }, 60_000)

  it('should release a licence of every kind in node_modules, recited from memory', async () => {
    const licences = {
      'CC0-1.0': file('@speed-highlight/core/LICENSE'),
      'BlueOak-1.0.0': file('graceful-fs/LICENSE.md'),
      'MPL-2.0': file('lightningcss/LICENSE'),
      // Apache-2.0 without its (a)-(d) letters, and with the appendix's placeholder line.
      'Apache-2.0 (typescript)': file('typescript/LICENSE'),
      'Apache-2.0 (sharp)': file('sharp/LICENSE'),
    }
    for (const [kind, text] of Object.entries(licences)) {
      const pasted = `Copyright (c) 2021 Fjordline Widgets AS\n\n${text}`
      expect(await recite(pasted, text), kind).toContain('Here it is')
    }
  }, 60_000)
})
