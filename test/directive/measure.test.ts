/**
 * The directive measurement against the simulator configured as each model of the streaming bench:
 * it must find what the configuration put there (restating rate, the token the code begins at,
 * tokens to proof, within ±2 tokens) and recommend what the bench shows is right for that model.
 */
import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../../sim/clock'
import { type SimConfig, SimEngine } from '../../sim/engine'
import { loadTokenizer } from '../../sim/tokenizer'
import type { DirectiveOptions } from '../../src/tools/directive/directive-settings'
import { type DirectiveReport, measureDirective } from '../../src/tools/directive/run'
import { runnerTransport } from '../../src/tools/probe'

const MODEL = '@cf/zai-org/glm-5.3'
/** The streaming bench's decode speed. */
const RATE = 30

/** The canaries of the requests sent, per wording, in order (read from the directive in each prompt). */
let sent: Record<string, string[]> = {}

async function measureSim(
  config: Partial<SimConfig>,
  options: DirectiveOptions = {},
): Promise<DirectiveReport> {
  const clock = new VirtualClock()
  const engine = new SimEngine(
    { mode: 'fixed', decodeTokensPerSecond: RATE, prefillTokensPerSecond: 50_000, ...config },
    { clock },
  )
  const transport = runnerTransport(engine.binding('directive'), {
    model: MODEL,
    now: () => clock.now(),
    target: 'sim',
  })
  sent = {}
  return await measureDirective({
    transport: {
      ...transport,
      send(request) {
        const wording = request.prompt.includes('first thing in your thinking')
          ? 'note-first'
          : 'reply-first'
        const canary = /Begin your reply with the code (cnry_\w+)/.exec(request.prompt)?.[1]
        if (canary) sent[wording] = [...(sent[wording] ?? []), canary]
        return transport.send(request)
      },
    },
    formats: ['plain'],
    deliveries: ['stream'],
    scripts: ['latn'],
    lengths: [200],
    samples: 4,
    seed: 5,
    ...options,
  })
}

/** Qwen3 tokens of `text`: what the simulator's model counts. */
async function simTokens(text: string): Promise<number> {
  return (await loadTokenizer('qwen3')).encode(text).length
}

const wording = (r: DirectiveReport, w: string) => r.wordings.find((x) => x.wording === w)!

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

describe('the directive measurement on the streaming bench models', () => {
  it('finds a model that neither restates nor notes: proof only at the content, verified held past the budget', async () => {
    const report = await measureSim({})
    for (const w of report.wordings) {
      expect(w.echoRate).toBe(1)
      expect(w.restateRate).toBe(0)
      // The proof is the echo's end, after the whole reasoning.
      expect(w.tokensToProof!).toBeGreaterThan(w.reasoningTokens!)
    }
    expect(report.rate.tokensPerSecond).toBeCloseTo(RATE, 0)
    const rec = report.recommendation
    expect(rec.profile).toEqual({ echo: 'require', directive: 'reply-first' })
    expect(rec.streamRelease).toBe('verified')
    expect(rec.heartbeatMs).toBeGreaterThan(0)
    expect(report.exitCode).toBe(0)
    // An operator who accepts async gets it, and only then.
    const accepting = await measureSim({}, { acceptAsync: true })
    expect(accepting.recommendation.streamRelease).toBe('async')
    expect(accepting.recommendation.env.GUARD_STREAM_RELEASE).toBe('async')
  })

  it('finds a restating model where its configuration puts the code, within ±2 tokens', async () => {
    for (const at of [0, 24, 60]) {
      const report = await measureSim({ directiveQuoteRate: 1, restateAtToken: at })
      // restateAtToken 0 restates the whole instruction first: the code follows its preamble.
      const starts = at === 0 ? await simTokens('The instruction at the end: begin with ') : at
      for (const w of report.wordings) {
        expect(w.restateRate).toBe(1)
        const cell = report.cells.find((c) => c.cell.wording === w.wording)!
        expect(Math.abs(cell.restateToken! - starts)).toBeLessThanOrEqual(2)
        // The proof is whole when the code's last token is read: where it began plus its own tokens.
        const ends = await Promise.all(
          (sent[w.wording] ?? []).map(async (c) => starts + (await simTokens(c))),
        )
        expect(ends).toHaveLength(4)
        expect(Math.abs(w.tokensToProof! - median(ends))).toBeLessThanOrEqual(2)
      }
      expect(report.recommendation.streamRelease).toBe('verified')
      // At 30 tokens/s the 2 s budget is 60 tokens: a code restated at token 60 is proven past it.
      if (at < 60) expect(report.recommendation.heartbeatMs).toBeUndefined()
      else expect(report.recommendation.heartbeatMs).toBeGreaterThan(0)
    }
  })

  it('recommends note-first for a model that follows it, and only that wording restates', async () => {
    const report = await measureSim({ thinkingNoteRate: 1 })
    expect(wording(report, 'note-first').restateRate).toBe(1)
    expect(wording(report, 'reply-first').restateRate).toBe(0)
    const starts = await simTokens('Noting the code first: ')
    const cell = report.cells.find((c) => c.cell.wording === 'note-first')!
    expect(Math.abs(cell.restateToken! - starts)).toBeLessThanOrEqual(2)
    expect(report.recommendation.profile.directive).toBe('note-first')
    expect(report.recommendation.streamRelease).toBe('verified')
    expect(JSON.parse(report.recommendation.env.GUARD_MODELS)).toEqual({
      [MODEL]: { echo: 'require', directive: 'note-first' },
    })
  })

  it('measures a 1,000-token thinker: held over 30 s under reply-first, released early under note-first', async () => {
    const plain = await measureSim({ extraReasoningTokens: 1_000 })
    const w = wording(plain, 'reply-first')
    expect(w.reasoningTokens!).toBeGreaterThan(1_000)
    expect(w.firstByteMs.verified!).toBeGreaterThan(33_000)
    expect(plain.recommendation.heartbeatMs).toBeGreaterThan(0)
    const noting = await measureSim({ extraReasoningTokens: 1_000, thinkingNoteRate: 1 })
    expect(wording(noting, 'note-first').firstByteMs.verified!).toBeLessThan(1_000)
    expect(noting.recommendation.profile.directive).toBe('note-first')
    expect(noting.recommendation.heartbeatMs).toBeUndefined()
  })
})

describe('the directive measurement on every kind of request', () => {
  it('reads JSON-mode slips, tools and whole answers in three scripts', async () => {
    const report = await measureSim(
      { jsonEchoLateRate: 1 },
      {
        formats: ['plain', 'json', 'tools'],
        deliveries: ['stream', 'whole'],
        scripts: ['latn', 'cyrl', 'hans'],
        samples: 1,
      },
    )
    expect(report.cells).toHaveLength(3 * 2 * 5)
    expect(report.cells.every((c) => c.answers === 1 && c.errors === 0)).toBe(true)
    // Every JSON answer wrote its echo member, none first: the guard would find no echo.
    expect(report.json).toEqual({ answers: 6, echoRate: 0, lateRate: 1 })
    for (const c of report.cells.filter((c) => c.cell.format !== 'json')) {
      expect(c.echoRate).toBe(1)
      expect(c.decorations).toEqual({ plain: 1 })
    }
    // Whole answers have no positions: rates only.
    for (const c of report.cells.filter((c) => c.cell.delivery === 'whole')) {
      expect(c.restateToken).toBeNull()
      expect(c.reasoningTokens).toBeNull()
    }
  })

  it('finds a model that ignores the directive unfit to require it', async () => {
    const report = await measureSim({ echoIgnoreRate: 1 })
    expect(report.wordings.map((w) => w.echoRate)).toEqual([0, 0])
    expect(report.recommendation.profile.echo).toBe('scan-only')
    expect(report.recommendation.fit).toBe(false)
    expect(report.exitCode).toBe(1)
  })

  it('stops at its budget and says so', async () => {
    const report = await measureSim({}, { maxRequests: 3 })
    expect(report.requests).toBe(3)
    expect(report.stopped).toBe('budget')
  })

  it('never holds an answer text in its report', async () => {
    const report = await measureSim({}, { formats: ['plain', 'json'] })
    const text = JSON.stringify(report)
    // The simulated model quotes the prompt's filler: no quote of it may reach the report.
    expect(text).not.toMatch(/From the context|cnry_[0-9a-z]{24}/i)
  })
})
