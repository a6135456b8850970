import { describe, expect, it } from 'vitest'
import { type GuardOptions, MemoryQuarantineStore } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { githubChecksum } from '../../src/plugins/secrets'
import { SURFACES, type Surface } from '../support/surfaces'
import { recordVerdicts } from '../support/verdicts'

const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'planted-stand-in-test-secret-0123456789abcdef'
const models = { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } }
/** A GitHub token with its valid CRC-32 (the detector's check): the attacker's own secret. */
const RANDOM = 'Xq7Lm2Pz9Rt4Kw8Nv3Bc6Hd1Jf5Gs0'
const ATTACKER_TOKEN = `ghp_${RANDOM}${githubChecksum(RANDOM)}`

function lastUser(inputs: Record<string, unknown>): string {
  const messages = inputs.messages as { role: string; content: string }[]
  return messages.filter((m) => m.role === 'user').at(-1)!.content
}

function canaryOf(inputs: Record<string, unknown>): string {
  return [...lastUser(inputs).matchAll(/cnry_[0-9a-z]{24}/g)].at(-1)![0]
}

/**
 * An upstream whose model answers every request by quoting `quote(inputs)` after its echo, whole or
 * streamed (one event per 9 characters, so a stand-in is always split); it records what it was sent.
 */
function quotingUpstream(quote: (inputs: Record<string, unknown>) => string) {
  const sent: string[] = []
  const upstream: AiRunner = {
    run: async (_model, inputs) => {
      sent.push(JSON.stringify(inputs))
      const text = `${canaryOf(inputs)}\nThe document says: ${quote(inputs)}`
      if (inputs.stream !== true) return { response: text }
      let body = ''
      for (let i = 0; i < text.length; i += 9) {
        body += `data: ${JSON.stringify({ response: text.slice(i, i + 9) })}\n\n`
      }
      body += 'data: [DONE]\n\n'
      const bytes = new TextEncoder().encode(body)
      return new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(bytes)
          c.close()
        },
      })
    },
  }
  return { upstream, sent }
}

/** The stand-in the guard sent upstream in place of the attacker's token. */
function standInIn(sent: string): string {
  const found = /ghp_[A-Za-z0-9]{36}/.exec(sent)
  if (!found || found[0] === ATTACKER_TOKEN) throw new Error('no stand-in was sent')
  return found[0]
}

/**
 * A guard with secrets substituted, and the stand-in it sent upstream for `tenant`'s token: what the
 * tenant could learn of its own (here read off the wire; in practice by asking the model to transform
 * it), or what a stale page of its prompt would carry.
 */
async function standInOfTenant(surface: Surface, tenant: string) {
  const learn = quotingUpstream(() => 'nothing')
  const quarantine = new MemoryQuarantineStore()
  const options: GuardOptions = {
    secret: SECRET,
    models,
    quarantine: { store: quarantine },
    secrets: { high: 'substitute' },
  }
  await surface(learn.upstream, options)(tenant, MODEL, {
    messages: [{ role: 'user', content: `my token is ${ATTACKER_TOKEN}` }],
  })
  return { standIn: standInIn(learn.sent[0]!), options, quarantine }
}

for (const [surfaceName, surface] of SURFACES) {
  describe(`a stand-in planted in another tenant's prompt (${surfaceName})`, () => {
    for (const stream of [false, true]) {
      const mode = stream ? 'stream' : 'whole'

      it(`should not get that tenant's answer withheld, nor blame the planter (${mode})`, async () => {
        // The attacker learns a stand-in of its own and plants it in a page the victim's prompt quotes.
        const { standIn: planted, options, quarantine } = await standInOfTenant(surface, 'attacker')

        const page = `Release notes. Build token: ${planted}. Deploy on Friday.`
        const verdicts = recordVerdicts()
        const victim = quotingUpstream((inputs) => lastUser(inputs).split('\n')[0]!)
        const got = await surface(victim.upstream, {
          ...options,
          hooks: { onVerdict: verdicts.onVerdict },
        })('victim', MODEL, { messages: [{ role: 'user', content: page }], stream })
        expect(got.status).toBe(200)
        expect(got.code).toBeUndefined()
        // The victim gets its page back as the model quoted it, the planted text unchanged.
        expect(got.text).toContain(page)
        expect(got.text).not.toContain(ATTACKER_TOKEN)
        expect(verdicts.events.map((e) => e.action)).toEqual(['release'])
        expect(await quarantine.list({})).toEqual([])
      })

      it(`should still withhold it as a leak when the prompt did not carry it (${mode})`, async () => {
        const { standIn, options, quarantine } = await standInOfTenant(surface, 'source')
        // The engine serves the source's text to another request: its stand-in is not in that prompt.
        const victim = quotingUpstream(() => `Build token: ${standIn}. Deploy on Friday.`)
        const got = await surface(victim.upstream, options)('receiver', MODEL, {
          messages: [{ role: 'user', content: 'What are the release notes?' }],
          stream,
        })
        expect(got.code).toBe('response_quarantined')
        expect(got.text).not.toContain(standIn)
        expect(got.text).not.toContain(standIn.slice(0, 12))
        expect(got.text).not.toContain(ATTACKER_TOKEN)
        const [record] = await quarantine.list({})
        expect(record?.reasons).toContain('foreign_stand_in')
        expect(record?.sourceTenants).toEqual(['source'])
      })
    }
  })
}
