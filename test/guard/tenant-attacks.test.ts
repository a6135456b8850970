import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import { D1TenantDirectory, type GuardOptions, guardAi, MemoryQuarantineStore } from '../../src'
import { MemoryCalibration } from '../../src/core/calibration/learned'
import { promptPieces } from '../../src/core/ceiling/prompt'
import { Guard } from '../../src/core/guard'
import { prefixKey } from '../../src/core/plan/plan'
import { PrefixRecord } from '../../src/core/timing/prefix-record'
import { DEFAULT_PLUGINS } from '../../src/default-plugins'
import { chat, document, rejection, sseText } from '../support/prompts'
import { direct, SURFACES, type Surface } from '../support/surfaces'
import { captureWarnings, recordVerdicts } from '../support/verdicts'

/**
 * The cross-tenant attacks, each as the attacker ran it, asserting on what every client received.
 * The incident scaled 1:80 (pool 8,192 behind a 16,384-token window) on one virtual clock shared by
 * engine and guard, so every TTFT is exactly the simulated prefill.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'tenant-attack-canary-secret-0123456789abcdef'
const SIM = {
  poolTokens: 8_192,
  contextWindow: 16_384,
  prefillTokensPerSecond: 400_000,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  seed: 12,
}
/**
 * A ceiling that lets over-pool prompts through (the pool wrongly taken for twice the window), so the
 * canary and timing guards stand alone: "even a prompt that slips past the ceiling cannot leak".
 */
const SLIPPED = {
  contextWindow: 32_768,
  kvPoolTokens: 32_768,
  maxPrefillTokensPerSecond: 800_000,
  defaultOutputReserve: 256,
}

// Every test builds a fresh guard through guardAi, which warns once that the isolate saw many option sets.
captureWarnings(/guardAi was called with more than \d+ different option sets/)

function setup(surface: Surface, extra: Partial<GuardOptions> = {}) {
  const clock = new VirtualClock()
  const engine = new SimEngine({ ...SIM, mode: 'pd-abort-leak' }, { clock })
  const quarantine = new MemoryQuarantineStore()
  const verdicts = recordVerdicts()
  const send = surface(engine.binding('account'), {
    secret: SECRET,
    models: { [MODEL]: SLIPPED },
    quarantine: { store: quarantine },
    timing: { minEvidenceMs: 5 },
    hooks: { now: () => clock.now(), onVerdict: verdicts.onVerdict },
    ...extra,
  })
  return { send, quarantine, engine, clock, verdicts }
}

/** The opt-out fields of 0.1: each switched the echo off. Dummy or empty values must count as absent. */
const OPT_OUTS: [string, Record<string, unknown>][] = [
  ['guided_json: null', { guided_json: null }],
  ['guided_json: {}', { guided_json: {} }],
  ['tools: []', { tools: [] }],
  [
    'a tool with tool_choice "none"',
    { tools: [{ type: 'function', function: { name: 'noop' } }], tool_choice: 'none' },
  ],
  ['response_format json_object', { response_format: { type: 'json_object' } }],
  ['response_format null', { response_format: null }],
]

describe('the primer + opt-out leak', () => {
  for (const [surfaceName, surface] of SURFACES) {
    for (const [name, optOut] of OPT_OUTS) {
      for (const stream of [false, true]) {
        it(`should deliver no byte of A to B and record the incident (${surfaceName}, ${name}, ${stream ? 'stream' : 'whole'})`, async () => {
          const { send, quarantine, verdicts } = setup(surface)
          // 1. A's long prompt with secrets: released, A's own.
          const a = await send('tenant-a', MODEL, chat(document('TENANT-A', 6_000), { stream }))
          expect(a.status).toBe(200)
          expect(a.text).toContain('TENANT-A')
          // 2. B's filler, so A's tail is no longer the freshest pages.
          const filler = await send('tenant-b', MODEL, chat(document('FILLER-B', 3_000)))
          expect(filler.status).toBe(200)
          // 3. The primer: over the engine's window. The guard (slipped) admits it; the engine refuses it.
          const attack = document('TENANT-B', 24_000)
          const primer = await send('tenant-b', MODEL, chat(attack))
          expect(primer.status).toBe(400)
          // 4. The attack: the same text, shorter (over the pool, under the window), with the opt-out.
          const b = await send(
            'tenant-b',
            MODEL,
            chat(attack.slice(0, Math.floor(attack.length / 2)), { stream, ...optOut }),
          )
          expect(b.text).not.toContain('TENANT-A')
          expect(b.status).toBe(422)
          expect(b.code).toBe('response_quarantined')
          const record = await quarantine.get(b.incidentId!)
          expect(record?.tenant).toBe('tenant-b')
          expect(record?.reasons.join(',')).toMatch(/ttft_impossible|foreign_canary|echo_missing/)
          if (record?.reasons.includes('foreign_canary')) {
            // The stale pages may hold A's prompt or B's own earlier (filler, primer) requests.
            expect(record.sourceTenants.length).toBeGreaterThan(0)
            for (const source of record.sourceTenants)
              expect(['tenant-a', 'tenant-b']).toContain(source)
          }
          // The operator's log names the incident once, under B.
          const logged = verdicts.of('quarantine')
          expect(logged.map((v) => [v.tenant, v.incidentId])).toEqual([['tenant-b', b.incidentId]])
        }, 60_000)
      }
    }
  }

  it('should release honest answers with each of those fields, canary stripped', async () => {
    const { send } = setup(direct)
    for (const [name, optOut] of OPT_OUTS) {
      const out = await send('tenant-c', MODEL, chat(document('TENANT-C', 2_000), optOut))
      expect(out.status, name).toBe(200)
      expect(out.text, name).toContain('TENANT-C')
      expect(out.text, name).not.toMatch(/cnry_/i)
    }
  }, 60_000)

  it('should ask a JSON-mode request for the echo member and release the object without it', async () => {
    const { send } = setup(direct)
    const out = await send(
      'tenant-c',
      MODEL,
      chat(document('TENANT-C', 2_000), { response_format: { type: 'json_object' } }),
    )
    expect(out.status).toBe(200)
    const content = (JSON.parse(out.body) as { choices: { message: { content: string } }[] })
      .choices[0]!.message.content
    const object = JSON.parse(content) as Record<string, unknown>
    expect(object).not.toHaveProperty('guard_echo')
    expect(content).toContain('TENANT-C')
  }, 30_000)

  it('should refuse dummy tool definitions instead of honouring them', async () => {
    const { send } = setup(direct)
    for (const tools of [[{}], [null], [{ type: 'function' }], [{ function: { name: '' } }]]) {
      const out = await send('tenant-b', MODEL, chat('hello', { tools }))
      expect(out.status).toBe(400)
      expect(out.code).toBe('invalid_request')
    }
  })
})

describe('fields that make the engine copy the prompt (vLLM, SGLang)', () => {
  const REFUSED: [string, unknown][] = [
    ['echo', true],
    ['add_generation_prompt', false],
    ['continue_final_message', true],
    ['prompt_logprobs', 1],
    ['logprobs', true],
    ['top_logprobs', 5],
    ['chat_template', '{{ messages[0].content }}'],
    ['n', 2],
  ]
  for (const [field, value] of REFUSED) {
    it(`should refuse "${field}": ${JSON.stringify(value)} before the engine, naming the field`, async () => {
      const { send, engine } = setup(direct)
      const before = engine.stats().requests.total
      const out = await send('tenant-b', MODEL, chat('Summarise this.', { [field]: value }))
      expect(out.status).toBe(400)
      expect(out.body).toContain(field)
      expect(engine.stats().requests.total).toBe(before)
    })
  }

  it('should pass their harmless values (echo: false, add_generation_prompt: true, logprobs: null)', async () => {
    const { send } = setup(direct)
    const out = await send(
      'tenant-b',
      MODEL,
      chat('Summarise this.', { echo: false, add_generation_prompt: true, logprobs: null }),
    )
    expect(out.status).toBe(200)
  })
})

describe('only verified answers teach', () => {
  it('should remember a prompt as a cached prefix only after its answer was verified', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine(
      { ...SIM, poolTokens: 65_536, contextWindow: 131_072, mode: 'fixed' },
      { clock },
    )
    const guard = new Guard(
      {
        secret: SECRET,
        models: { [MODEL]: { ...SLIPPED, contextWindow: 262_144, kvPoolTokens: 262_144 } },
        hooks: { onVerdict: recordVerdicts().onVerdict, now: () => clock.now() },
        timing: { minEvidenceMs: 5 },
      },
      DEFAULT_PLUGINS,
    )
    const ai = guard.runner(engine.binding('account'), 'tenant-b')
    const remembered = async (text: string) => {
      const digest = await PrefixRecord.digest(promptPieces(chat(text)).texts.join('\n'))
      expect(digest.hashes.length).toBeGreaterThan(0)
      return guard.prefixes.lookup(prefixKey('tenant-b', MODEL), digest).matchedChars
    }
    // The primer: over the engine's window, refused by the engine — never prefilled, never cached.
    const primer = document('TENANT-B', 160_000)
    expect((await rejection(ai.run(MODEL, chat(primer)))).status).toBe(400)
    expect(await remembered(primer)).toBe(0)
    // An honest prompt whose answer verified: remembered, so its repeat is excused as a cache hit.
    const honest = document('TENANT-B', 30_000)
    const out = await ai.run(MODEL, chat(honest, { stream: true }))
    // The delivered text, not the raw SSE: a word may be split across two events' deltas.
    const { reasoning, content } = sseText(
      await new Response(out as ReadableStream<Uint8Array>).text(),
    )
    expect(reasoning + content).toContain('TENANT-B')
    await Promise.resolve()
    expect(await remembered(honest)).toBeGreaterThan(0)
  }, 60_000)

  it('should not answer max_tokens: 1 with an incident: a clear client error, nothing stored', async () => {
    const { send, quarantine } = setup(direct)
    for (let i = 0; i < 20; i++) {
      const out = await send('tenant-b', MODEL, chat(document('TENANT-B', 500), { max_tokens: 1 }))
      expect(out.status).toBe(400)
      expect(out.code).toBe('invalid_request')
      expect(out.body).toMatch(/max_tokens/)
      expect(out.text).not.toContain('TENANT-B')
    }
    expect(await quarantine.list()).toEqual([])
  }, 30_000)
})

describe('learned state cannot be turned against other tenants', () => {
  it('should not let one tenant’s slow-script streams quarantine another tenant’s English', async () => {
    const clock = new VirtualClock()
    const engine = new SimEngine(
      {
        poolTokens: 262_144,
        contextWindow: 524_288,
        prefillTokensPerSecond: 50_000,
        decodeTokensPerSecond: Number.POSITIVE_INFINITY,
        seed: 3,
        mode: 'fixed',
      },
      { clock },
    )
    const calibration = new MemoryCalibration({ now: () => clock.now() })
    const options = {
      secret: SECRET,
      models: {
        [MODEL]: {
          contextWindow: 524_288,
          kvPoolTokens: 262_144,
          maxPrefillTokensPerSecond: 200_000,
          defaultOutputReserve: 256,
        },
      },
      ceiling: { calibration },
      timing: { minEvidenceMs: 5 },
      hooks: { now: () => clock.now(), onVerdict: recordVerdicts().onVerdict },
    }
    const english = guardAi(engine.binding('english'), { ...options, tenant: 'english' })
    const attacker = guardAi(engine.binding('attacker'), { ...options, tenant: 'attacker' })
    const honestEnglish = async () => {
      const out = await english.run(MODEL, chat(document('ENGLISH', 20_000), { stream: true }))
      return new Response(out as ReadableStream<Uint8Array>).text()
    }
    expect(await honestEnglish()).toContain('ENGLISH')
    for (let i = 0; i < 12; i++) {
      const out = await attacker.run(MODEL, chat(georgian(40_000, i), { stream: true }))
      await new Response(out as ReadableStream<Uint8Array>).text()
    }
    // Whatever the attacker taught, English answers of the same size are still released.
    for (let i = 0; i < 3; i++) expect(await honestEnglish()).toContain('ENGLISH')
  }, 120_000)
})

/** Georgian-script prose of about `chars` characters (deterministic), a script tokenizers split finely. */
function georgian(chars: number, seed: number): string {
  const letters = 'აბგდევზთიკლმნოპჟრსტუფქღყშჩცძწჭხჯჰ'
  let x = seed * 7919 + 17
  let out = ''
  while (out.length < chars) {
    x = (x * 48_271) % 2_147_483_647
    const word = 2 + (x % 9)
    for (let i = 0; i < word; i++) {
      x = (x * 48_271) % 2_147_483_647
      out += letters[x % letters.length]
    }
    out += x % 13 === 0 ? '.\n' : ' '
  }
  return out
}

describe('incidents are for leaks', () => {
  it('should fold one tenant’s flood of echo misses into one record, and keep every foreign-canary leak whole', async () => {
    const { send, quarantine, engine } = setup(direct)
    const a = await send('tenant-a', MODEL, chat(document('TENANT-A', 6_000)))
    expect(a.status).toBe(200)
    engine.configure({ echoIgnoreRate: 1 })
    const ids = new Set<string>()
    for (let i = 0; i < 30; i++) {
      const out = await send('tenant-b', MODEL, chat(document('TENANT-B', 500)))
      expect(out.status).toBe(422)
      expect(out.text).not.toContain('TENANT-A')
      ids.add(out.incidentId!)
    }
    const records = await quarantine.list({ tenant: 'tenant-b' })
    expect(records).toHaveLength(1)
    expect(records[0]?.count).toBe(30)
    expect(ids).toEqual(new Set([records[0]!.id]))
    // A leak in the middle of the flood is its own, whole record, naming whose data it held.
    engine.configure({ echoIgnoreRate: 0 })
    const leaks: string[] = []
    for (let i = 0; i < 3; i++) {
      const out = await send('tenant-b', MODEL, chat(document('TENANT-B', 12_000)))
      expect(out.text).not.toContain('TENANT-A')
      expect(out.status).toBe(422)
      leaks.push(out.incidentId!)
    }
    for (const id of leaks) {
      const record = await quarantine.get(id)
      expect(record?.reasons.join(',')).toMatch(/foreign_canary|ttft_impossible/)
      // Never folded: a record naming another tenant's data is kept whole, one per leak.
      if (record?.reasons.includes('foreign_canary')) {
        expect(record.count ?? 1).toBe(1)
        expect(record.sourceTenants.length).toBeGreaterThan(0)
      }
    }
    // The flood's record still counts only the flood.
    expect((await quarantine.get(records[0]!.id))?.count).toBe(30)
  }, 60_000)
})

describe('attribution across isolates', () => {
  it('should name the source tenant of a leak caught by another guard, through the shared directory', async () => {
    const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB
    const clock = new VirtualClock()
    const engine = new SimEngine({ ...SIM, mode: 'fixed' }, { clock })
    const quarantine = new MemoryQuarantineStore()
    const options = {
      secret: SECRET,
      models: { [MODEL]: SLIPPED },
      quarantine: { store: quarantine },
      timing: { minEvidenceMs: 5 },
      canary: { tenantDirectory: new D1TenantDirectory(db) },
      hooks: { now: () => clock.now(), onVerdict: recordVerdicts().onVerdict },
    }
    // Two isolates: A is served by one guard, B by another; only the directory is shared.
    const first = new Guard(options, DEFAULT_PLUGINS)
    const second = new Guard(options, DEFAULT_PLUGINS)
    const waits: Promise<unknown>[] = []
    const hooks = { waitUntil: (p: Promise<unknown>) => waits.push(p) }
    const a = first.runner(engine.binding('account'), 'tenant-a-elsewhere', hooks)
    const b = second.runner(engine.binding('account'), 'tenant-b', hooks)
    const out = await a.run(MODEL, chat(document('TENANT-A', 6_000)))
    expect(JSON.stringify(out)).toContain('TENANT-A')
    await Promise.all(waits)
    engine.configure({ mode: 'pd-abort-leak' })
    const error = await rejection(b.run(MODEL, chat(document('TENANT-B', 12_000))))
    expect(error.code).toBe('response_quarantined')
    const record = await quarantine.get(error.incidentId!)
    if (record?.reasons.includes('foreign_canary')) {
      expect(record.sourceTenants).toEqual(['tenant-a-elsewhere'])
    } else {
      // The stale pages read held no canary this time: the timing guard caught it alone.
      expect(record?.reasons).toContain('ttft_impossible')
    }
  }, 60_000)
})
