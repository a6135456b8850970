import { env, SELF } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { MemoryQuarantineStore } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import { importCanaryKey, inspectCanary, tenantTag } from '../../src/core/canary'
import { encodeSseEvent, type SseEvent, sseDecoder } from '../../src/core/format/sse'
import { Guard } from '../../src/core/guard'
import type { QuarantineRecord } from '../../src/core/vocabulary/quarantine'
import { DEFAULT_PLUGINS } from '../../src/default-plugins'
import { chat, document } from '../support/prompts'
import { ADMIN, KEY_A, KEY_B, sim } from '../support/worker'
import { openAiError } from './support'
import { MODEL, settle } from './upstreams'

/**
 * Tenant isolation. The tenant comes only from the bearer key: no header or body field can pick
 * another, and the guard's own per-tenant memory (the prefix record that excuses fast, honestly
 * cached answers) never relaxes one tenant's check because of another tenant's traffic.
 */
const DEV_SECRET = (env as unknown as { GUARD_SECRET: string }).GUARD_SECRET

/** Headers and body fields a client might hope the guard reads to choose a tenant. */
const SPOOF_HEADERS = {
  'x-tenant': 'tenant-a',
  'x-tenant-id': 'tenant-a',
  'x-user': 'tenant-a',
  'x-forwarded-user': 'tenant-a',
  'x-forwarded-for': '10.0.0.1',
  'x-guard-tenant': 'tenant-a',
  'cf-access-authenticated-user-email': 'owner@tenant-a.example',
  forwarded: 'for=tenant-a',
}
const SPOOF_BODY = { user: 'tenant-a', tenant: 'tenant-a', metadata: { tenant: 'tenant-a' } }

function postAs(key: string, body: unknown, headers: Record<string, string> = {}) {
  return SELF.fetch('http://guard.test/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  })
}

describe('the tenant comes from the bearer key alone', { timeout: 30_000 }, () => {
  beforeEach(async () => {
    await sim.reset({
      mode: 'fixed',
      prefillTokensPerSecond: Number.POSITIVE_INFINITY,
      decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    })
  })

  it("should bind the canary to the key's tenant whatever the headers and body claim", async () => {
    const key = await importCanaryKey(DEV_SECRET)
    for (const [apiKey, tenant] of [
      [KEY_B, 'tenant-b'],
      [KEY_A, 'tenant-a'],
    ] as const) {
      const res = await postAs(
        apiKey,
        { model: MODEL, ...chat('hello'), ...SPOOF_BODY },
        SPOOF_HEADERS,
      )
      expect(res.status).toBe(200)
      await res.text()
      const echoed = (await sim.stats()).recent.at(-1)?.echoed
      const info = await inspectCanary(key, echoed ?? '')
      expect(info.ours).toBe(true)
      if (info.ours) expect(info.tenantTag).toBe(await tenantTag(key, tenant))
    }
  })

  it("should record a withheld answer under the key's tenant whatever the headers claim", async () => {
    await sim.configure({ echoIgnoreRate: 1 }) // the model never echoes: every answer is withheld
    const res = await postAs(
      KEY_B,
      { model: MODEL, ...chat('hello'), ...SPOOF_BODY },
      SPOOF_HEADERS,
    )
    const { error } = openAiError(await res.text())
    expect([res.status, error.code]).toEqual([422, 'response_quarantined'])
    const record = (await (
      await SELF.fetch(`http://guard.test/admin/incidents/${error.incident_id}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })
    ).json()) as QuarantineRecord
    expect(record.tenant).toBe('tenant-b')
  })

  it('should refuse ambiguous or misplaced keys with 401 and call no model', async () => {
    const before = (await sim.stats()).requests.total
    const attempts: Record<string, string>[] = [
      { authorization: `Bearer ${KEY_B}, Bearer ${KEY_A}` },
      { authorization: `Bearer ${KEY_B} ${KEY_A}` },
      { authorization: `Basic ${btoa(`${KEY_B}:`)}` },
      { authorization: KEY_B },
      { 'x-api-key': KEY_B },
      { authorization: `Bearer ${KEY_B.slice(0, -1)}` },
      { authorization: `Bearer ${KEY_B}x` },
    ]
    for (const headers of attempts) {
      const res = await SELF.fetch('http://guard.test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model: MODEL, ...chat('hello') }),
      })
      const { error } = openAiError(await res.text())
      expect([headers, res.status, error.code]).toEqual([headers, 401, 'invalid_api_key'])
    }
    expect((await sim.stats()).requests.total).toBe(before)
  })
})

/** The engine's answers with `usage.prompt_tokens_details.cached_tokens` zeroed: an upstream that hides its cache. */
function hidingCachedTokens(upstream: AiRunner): AiRunner {
  const utf8 = new TextEncoder()
  const zero = (json: Record<string, unknown>) => {
    const usage = json.usage as { prompt_tokens_details?: { cached_tokens?: number } } | undefined
    if (usage?.prompt_tokens_details) usage.prompt_tokens_details.cached_tokens = 0
    return json
  }
  return {
    run: async (model, inputs, options) => {
      const out = await upstream.run(model, inputs, options)
      if (!(out instanceof ReadableStream)) return zero(out as Record<string, unknown>)
      return (out as ReadableStream<Uint8Array>).pipeThrough(sseDecoder()).pipeThrough(
        new TransformStream<SseEvent, Uint8Array>({
          transform(event, controller) {
            const zeroed =
              event.data === '[DONE]'
                ? event
                : { data: JSON.stringify(zero(JSON.parse(event.data))) }
            controller.enqueue(utf8.encode(encodeSseEvent(zeroed)))
          },
        }),
      )
    },
  }
}

/**
 * A prompt the guard's prefix record covers exactly: the texts it hashes ("user\n" + content) fill
 * whole 64 KiB chunks, so a repeat counts as fully cached.
 */
function longPrompt(tenant: string): string {
  const text = document(tenant, 45_000)
  return text.slice(0, 3 * 64 * 1024 - 'user\n'.length)
}

describe("one tenant's prefix record never relaxes another tenant's timing check", {
  timeout: 30_000,
}, () => {
  async function setup(options: { hideCache: boolean }) {
    const clock = new VirtualClock()
    // One engine account for everyone, like the Worker's binding: the engine's prefix cache is shared.
    const engine = new SimEngine(
      {
        mode: 'fixed',
        prefillTokensPerSecond: 100_000,
        decodeTokensPerSecond: Infinity,
        splitRate: 0,
      },
      { clock },
    )
    const binding = engine.binding('shared-account')
    const upstream = options.hideCache ? hidingCachedTokens(binding) : binding
    const quarantine = new MemoryQuarantineStore()
    // One guard for every tenant, as in the Worker and the middleware. The echo verifies every answer
    // here (the engine reads each prompt whole), so timing decides; and only echo-verified answers may
    // enter a tenant's prefix record.
    const guard = new Guard(
      {
        secret: DEV_SECRET,
        // The cache is shared across tenants on purpose: what this suite tests is the timing record.
        models: { [MODEL]: { maxPrefillTokensPerSecond: 200_000, cacheIsolation: 'off' } },
        timing: { minEvidenceMs: 5 },
        quarantine: { store: quarantine },
        hooks: { now: () => clock.now() },
      },
      DEFAULT_PLUGINS,
    )
    const ask = async (tenant: string, content: string) => {
      const r = await settle(
        guard.runner(upstream, tenant).run(MODEL, chat(content, { stream: true })),
      )
      const record = r.ok ? undefined : await quarantine.get(r.error.incidentId ?? '')
      return { ...r, record }
    }
    return { ask, engine }
  }

  it("should release tenant A's repeat (its own record) and quarantine tenant B sending A's prefix", async () => {
    const { ask, engine } = await setup({ hideCache: true })
    const prompt = longPrompt('TENANT-A')
    const first = await ask('tenant-a', prompt)
    expect(first.ok).toBe(true)
    const repeat = await ask('tenant-a', prompt)
    expect(repeat.ok).toBe(true)
    expect(engine.stats().recent.at(-1)?.cachedTokens).toBeGreaterThan(30_000) // the engine served it from cache
    const other = await ask('tenant-b', prompt)
    expect(engine.stats().recent.at(-1)?.cachedTokens).toBeGreaterThan(30_000)
    expect(other.ok).toBe(false)
    if (!other.ok) expect(other.error.code).toBe('response_quarantined')
    expect(other.record?.tenant).toBe('tenant-b')
    expect(other.record?.reasons).toContain('ttft_impossible')
    expect(other.ok ? other.body : '').not.toContain('TENANT-A')
  }, 30_000)

  it("should release tenant B's own long prompt, and B's cache hit when the upstream reports it", async () => {
    const hidden = await setup({ hideCache: true })
    await hidden.ask('tenant-a', longPrompt('TENANT-A'))
    const own = await hidden.ask('tenant-b', longPrompt('TENANT-B'))
    expect(own.ok).toBe(true)

    const honest = await setup({ hideCache: false })
    const prompt = longPrompt('TENANT-A')
    expect((await honest.ask('tenant-a', prompt)).ok).toBe(true)
    const reported = await honest.ask('tenant-b', prompt)
    // The upstream's own cached_tokens explains the fast first token: not an accusation.
    expect(reported.ok).toBe(true)
  }, 30_000)
})
