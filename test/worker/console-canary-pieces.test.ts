/**
 * @module No piece of a canary or marker reaches a console page: an answer withheld with this request's
 * canary quoted without its first letters, another request's canary whole and cut short, and pieces of
 * its own and another tenant's prefix markers is sealed with every 8-character piece replaced — so the
 * incident page and the JSON API show where they were, never what.
 */
import { env, SELF } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { createGuard, GuardError } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, mintCanary, prefixMarker } from '../../src/core/canary'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import type { QuarantineRecord } from '../../src/core/vocabulary/quarantine'
import { directiveCanary } from '../support/prompts'
import { ADMIN } from '../support/worker'

const bindings = env as unknown as { QUARANTINE_DB: D1Database; QUARANTINE_KEY: string }
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'console-canary-pieces-secret-0123456789abcdef'
const PIECE = 8

/** Every window of `PIECE` characters of `secret`, lowercase. */
function windows(secret: string): string[] {
  const lower = secret.toLowerCase()
  return Array.from({ length: lower.length - PIECE + 1 }, (_, i) => lower.slice(i, i + PIECE))
}

/** The pieces of `secrets` that `text` holds (none, for a page that is safe). */
function piecesIn(text: string, secrets: readonly string[]): string[] {
  const lower = text.toLowerCase()
  return secrets.flatMap(windows).filter((w) => lower.includes(w))
}

describe('canaries on console pages', () => {
  it('should show no 8-character piece of any canary or marker of a withheld answer', async () => {
    const key = await importCanaryKey(SECRET)
    const foreign = await mintCanary(key, { requestId: 'another-request', tenant: 'tenant-a' })
    const foreignMarker = await prefixMarker(key, 'tenant-a')
    let own = ''
    let marker = ''
    const upstream: AiRunner = {
      run: async (_model, inputs) => {
        own = directiveCanary(inputs)
        marker = /cnry_[0-9a-z]{24}/.exec(JSON.stringify(inputs))![0]
        // No echo: withheld. The quotes a leaky model writes, none with its `cnry_` in front.
        const content = [
          `TENANT-B summary: ${own.slice(7)} was in my prompt,`,
          `and ${foreign} too, cut short as ${foreign.slice(9, 27).toUpperCase()};`,
          `my marker read ${marker.slice(6)}, another tenant's ${foreignMarker.slice(8, 26)}.`,
        ].join(' ')
        return {
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: MODEL,
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 },
        }
      },
    }
    const guard = createGuard({
      secret: SECRET,
      models: { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } },
      quarantine: {
        store: new D1QuarantineStore(bindings.QUARANTINE_DB, { key: bindings.QUARANTINE_KEY }),
      },
    })
    const error = await guard
      .wrap(upstream, { tenant: 'tenant-b' })
      .run(MODEL, { messages: [{ role: 'user', content: 'Summarise the ledger.' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(error).toBeInstanceOf(GuardError)
    const id = (error as GuardError).incidentId!
    expect(id).toMatch(/^inc_/)
    const secrets = [own, marker, foreign, foreignMarker]
    expect(new Set(secrets).size).toBe(4)

    const html = await (
      await SELF.fetch(`http://guard.test/admin/incidents/${id}`, {
        headers: { accept: 'text/html', authorization: `Bearer ${ADMIN}` },
      })
    ).text()
    const json = (await (
      await SELF.fetch(`http://guard.test/admin/incidents/${id}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })
    ).json()) as QuarantineRecord
    // The words around them are kept: the redaction is of the secrets, not of the answer.
    expect(html).toContain('TENANT-B summary: [canary] was in my prompt')
    expect(json.withheld.content).toContain('my marker read [canary], another tenant')
    expect(piecesIn(html, secrets)).toEqual([])
    expect(piecesIn(JSON.stringify(json), secrets)).toEqual([])
    // As stored: the record itself never held them.
    expect(piecesIn(json.withheld.content ?? '', secrets)).toEqual([])
  })

  it('should keep canary-like text that is no secret of the guard: look-alikes and prose', async () => {
    const upstream: AiRunner = {
      run: async () => ({
        id: 'c2',
        object: 'chat.completion',
        created: 1,
        model: MODEL,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'no echo; hash 0123456789abcdefghjkmnpq stays' },
            finish_reason: 'stop',
          },
        ],
      }),
    }
    const guard = createGuard({
      secret: SECRET,
      models: { [MODEL]: { maxPrefillTokensPerSecond: 1e9 } },
      quarantine: {
        store: new D1QuarantineStore(bindings.QUARANTINE_DB, { key: bindings.QUARANTINE_KEY }),
      },
    })
    const error = (await guard
      .wrap(upstream, { tenant: 'tenant-c' })
      .run(MODEL, { messages: [{ role: 'user', content: 'Hello.' }] })
      .catch((e: unknown) => e)) as GuardError
    const json = (await (
      await SELF.fetch(`http://guard.test/admin/incidents/${error.incidentId}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })
    ).json()) as QuarantineRecord
    expect(json.withheld.content).toBe('no echo; hash 0123456789abcdefghjkmnpq stays')
  })
})
