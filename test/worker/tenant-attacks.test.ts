import { beforeEach, describe, expect, it } from 'vitest'
import { chat, document, sseText } from '../support/prompts'
import { ADMIN, get, KEY_A, KEY_B, post, sim } from '../support/worker'

/**
 * The cross-tenant attacks over HTTP against the Worker as configured for development (built-in
 * glm-5.3 profile: the guard believes the published 681,280-token pool), with the simulator's pool
 * wrongly smaller (8,192 behind a 16,384-token window): every over-pool prompt slips past the
 * ceiling, so the canary guards stand alone, as they must when a deployment's pool shrinks under
 * its profile.
 */
const MODEL = '@cf/zai-org/glm-5.3'

beforeEach(async () => {
  await sim.reset({
    mode: 'pd-abort-leak',
    poolTokens: 8_192,
    contextWindow: 16_384,
    prefillTokensPerSecond: Number.POSITIVE_INFINITY,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
    seed: 12,
  })
})

interface Received {
  status: number
  text: string
  code?: string
  incidentId?: string
}

async function ask(key: string, body: Record<string, unknown>): Promise<Received> {
  const res = await post('/v1/chat/completions', { model: MODEL, ...body }, key)
  const raw = await res.text()
  if (res.status !== 200) {
    const error = (JSON.parse(raw) as { error: { code: string; incident_id?: string } }).error
    return {
      status: res.status,
      text: raw,
      code: error.code,
      ...(error.incident_id ? { incidentId: error.incident_id } : {}),
    }
  }
  const { reasoning, content } = body.stream ? sseText(raw) : { reasoning: '', content: '' }
  return { status: 200, text: `${reasoning}\n${content}\n${raw}` }
}

const OPT_OUTS: [string, Record<string, unknown>][] = [
  ['guided_json: null', { guided_json: null }],
  ['tools: []', { tools: [] }],
  [
    'a tool with tool_choice "none"',
    { tools: [{ type: 'function', function: { name: 'noop' } }], tool_choice: 'none' },
  ],
  ['response_format json_object', { response_format: { type: 'json_object' } }],
]

describe('the primer + opt-out leak over HTTP', () => {
  for (const [name, optOut] of OPT_OUTS) {
    for (const stream of [false, true]) {
      it(`should deliver no byte of A to B and record the incident (${name}, ${stream ? 'stream' : 'whole'})`, async () => {
        const a = await ask(KEY_A, { ...chat(document('TENANT-A', 5_000)), stream })
        expect(a.status).toBe(200)
        expect(a.text).toContain('TENANT-A')
        const attack = document('TENANT-B', 24_000)
        // The primer: over the engine's window, admitted by the (wrong) ceiling, refused by the engine.
        const primer = await ask(KEY_B, chat(attack))
        expect(primer.status).toBe(400)
        const b = await ask(KEY_B, {
          ...chat(attack.slice(0, Math.floor(attack.length / 2))),
          ...optOut,
          stream,
        })
        expect(b.text).not.toContain('TENANT-A')
        expect([b.status, b.code]).toEqual([422, 'response_quarantined'])
        const record = (await (await get(`/admin/incidents/${b.incidentId}`, ADMIN)).json()) as {
          tenant: string
          reasons: string[]
        }
        expect(record.tenant).toBe('tenant-b')
        expect(record.reasons.join(',')).toMatch(/foreign_canary|echo_missing|ttft_impossible/)
      }, 60_000)
    }
  }
})

describe('request fields that weaken verification, over HTTP', () => {
  for (const [field, value] of [
    ['echo', true],
    ['add_generation_prompt', false],
    ['continue_final_message', true],
    ['logprobs', true],
    ['prompt_logprobs', 1],
  ] as const) {
    it(`should refuse "${field}" with a 400 naming it, before the engine`, async () => {
      const before = (await sim.stats()).requests.total
      const res = await ask(KEY_B, { ...chat('Summarise this.'), [field]: value })
      expect([res.status, res.code]).toEqual([400, 'invalid_request'])
      expect(res.text).toContain(field)
      expect((await sim.stats()).requests.total).toBe(before)
    })
  }

  it('should answer max_tokens: 1 with a client error and store no incident', async () => {
    const counts = async () =>
      ((await (await get('/admin/stats', ADMIN)).json()) as { incidents: Record<string, number> })
        .incidents
    const before = await counts()
    for (let i = 0; i < 5; i++) {
      const res = await ask(KEY_B, { ...chat(document('TENANT-B', 500)), max_tokens: 1 })
      expect([res.status, res.code]).toEqual([400, 'invalid_request'])
      expect(res.text).toMatch(/max_tokens/)
    }
    expect(await counts()).toEqual(before)
  })
})
