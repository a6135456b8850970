import { describe, expect, it } from 'vitest'
import {
  type ProbeProgress,
  ProbeTransportError,
  renderReport,
  runProbe,
} from '../../src/tools/probe'
import { answer, fakeTransport, limitTransport, markersOf } from './fake'

const small = { window: 32_768, seed: 1 }

describe('probe runs', () => {
  it('should report the JSON shape: verdict, bracket, flags, recommendation, profile, budget, steps', async () => {
    const transport = limitTransport(10_000, (req) => answer(req.prompt, { content: '' }))
    const report = await runProbe({ transport, ...small })
    const json = JSON.parse(JSON.stringify(report)) as Record<string, unknown>
    expect(Object.keys(json).sort()).toEqual(
      [
        'advertisedWindow',
        'budget',
        'converged',
        'exitCode',
        'fatal',
        'guard',
        'impossibleTtft',
        'largestOk',
        'leak',
        'model',
        'observedPrefillTokensPerSecond',
        'profile',
        'profileSnippet',
        'recommendation',
        'seed',
        'smallestFailure',
        'steps',
        'summary',
        'target',
        'tolerance',
        'top',
        'verdict',
        'version',
      ].sort(),
    )
    expect(report).toMatchObject({
      version: 1,
      verdict: 'unsafe',
      exitCode: 1,
      target: 'fake',
      model: 'fake-model',
      seed: 1,
      leak: false,
      impossibleTtft: false,
      fatal: null,
      guard: null,
      smallestFailure: { kind: 'missing-needle' },
    })
    expect(report.largestOk?.tokens).toBeLessThanOrEqual(10_000)
    expect(report.largestOk?.tokens).toBeGreaterThanOrEqual(9_950)
    expect(report.smallestFailure?.tokens).toBeGreaterThan(10_000)
    expect(report.steps[0]).toMatchObject({
      index: 1,
      tokens: 1024,
      kind: 'ok',
      attempt: 0,
      missing: [],
    })
    expect(report.budget).toMatchObject({
      requests: transport.calls.length,
      maxRequests: 40,
      stoppedBy: null,
    })
    expect(report.budget.promptTokens).toBe(transport.calls.reduce((n, c) => n + c.tokens, 0))
    const text = renderReport(report)
    expect(text).toContain('UNSAFE (exit 1)')
    expect(text).toContain("'fake-model': {")
    // The report never carries answer text.
    expect(JSON.stringify(report)).not.toContain('Reading the first')
  })

  it('should flag a leak when an answer quotes an earlier request, and only then', async () => {
    let previous = ''
    const transport = fakeTransport((req, tokens) => {
      const quoted = tokens > 5000 ? `“${markersOf(previous).tag} river”` : ''
      previous = req.prompt
      return answer(req.prompt, { reasoning: quoted })
    })
    const report = await runProbe({ transport, ...small })
    expect(report).toMatchObject({ leak: true, verdict: 'unsafe', exitCode: 1 })
    expect(report.smallestFailure?.kind).toBe('foreign-content')
    const leaked = report.steps.find((s) => s.kind === 'foreign-content')
    expect(leaked?.foreignFrom).toEqual([(leaked?.index ?? 0) - 1])
    expect(report.summary).toContain('LEAK')
  })

  it('should be safe (exit 0) when every length up to the top is answered correctly', async () => {
    const transport = limitTransport(Infinity, () => answer(''))
    const report = await runProbe({ transport, ...small })
    expect(report).toMatchObject({
      verdict: 'safe',
      exitCode: 0,
      leak: false,
      smallestFailure: null,
    })
    expect(report.largestOk?.tokens).toBe(report.top)
    expect(transport.calls.at(-1)?.tokens).toBe(report.top)
  })

  it('should stop at max-requests and say it could not conclude (exit 2)', async () => {
    const transport = limitTransport(Infinity, () => answer(''))
    const report = await runProbe({ transport, ...small, maxRequests: 3 })
    expect(transport.calls).toHaveLength(3)
    expect(report).toMatchObject({ verdict: 'inconclusive', exitCode: 2 })
    expect(report.budget.stoppedBy).toBe('max-requests')
    expect(report.summary).toContain('max-requests budget ran out')
  })

  it('should never send past max-tokens-total', async () => {
    const transport = limitTransport(Infinity, () => answer(''))
    const report = await runProbe({ transport, ...small, maxTokensTotal: 12_000, maxOutput: 100 })
    // 1,024 + 2,048 + 4,096 (+100 each) fit; 8,192 more would not.
    expect(transport.calls.map((c) => c.tokens)).toEqual([1024, 2048, 4096])
    expect(report.budget).toMatchObject({ stoppedBy: 'max-tokens-total', chargedTokens: 7468 })
    expect(report.exitCode).toBe(2)
  })

  it('should still conclude unsafe when the budget ends after a failure was found', async () => {
    const transport = limitTransport(3000, (req) => answer(req.prompt, { content: '' }))
    const report = await runProbe({ transport, ...small, maxRequests: 3 })
    expect(report).toMatchObject({ verdict: 'unsafe', exitCode: 1, converged: false })
    expect(report.budget.stoppedBy).toBe('max-requests')
  })

  it('should retry a 429 once with a fresh prompt, and not retry a 400', async () => {
    const transport = fakeTransport((req, _tokens, n) => {
      if (n === 2) throw new ProbeTransportError('http', 'HTTP 429: slow down', { status: 429 })
      if (n === 6) throw new ProbeTransportError('http', 'HTTP 400: too long', { status: 400 })
      return answer(req.prompt)
    })
    const report = await runProbe({ transport, ...small, maxRequests: 6 })
    const [first, second, third] = transport.calls
    expect(second?.tokens).toBe(2048)
    expect(third?.tokens).toBe(2048)
    expect(markersOf(third?.prompt ?? '').start).not.toBe(markersOf(second?.prompt ?? '').start)
    expect(first?.tokens).toBe(1024)
    expect(report.steps[1]).toMatchObject({ kind: 'error', attempt: 0, error: { status: 429 } })
    expect(report.steps[2]).toMatchObject({ kind: 'ok', attempt: 1 })
    expect(report.steps[5]).toMatchObject({ kind: 'error', attempt: 0, error: { status: 400 } })
  })

  it('should stop at once on a fatal status (exit 2) and on an unreachable target', async () => {
    const denied = fakeTransport(() => {
      throw new ProbeTransportError('http', 'HTTP 401: bad key', { status: 401 })
    })
    const report = await runProbe({ transport: denied, ...small })
    expect(denied.calls).toHaveLength(1)
    expect(report).toMatchObject({ verdict: 'inconclusive', exitCode: 2 })
    expect(report.fatal).toContain('HTTP 401: bad key')
    expect(report.fatal).toContain('--key')

    const down = fakeTransport(() => {
      throw new ProbeTransportError('network', 'fetch failed: ECONNREFUSED')
    })
    const unreachable = await runProbe({ transport: down, ...small })
    expect(down.calls).toHaveLength(2)
    expect(unreachable.exitCode).toBe(2)
    expect(unreachable.fatal).toBe('could not reach fake: fetch failed: ECONNREFUSED')
  })

  it('should not pin a limit where the target stopped accepting connections (exit 2)', async () => {
    // A dev server that crashed or reloaded mid-run (seen with `wrangler dev` while its config changed).
    const dies = fakeTransport((req, _tokens, n) => {
      if (n >= 5) throw new ProbeTransportError('network', 'fetch failed: connect ECONNREFUSED')
      return answer(req.prompt)
    })
    const report = await runProbe({ transport: dies, ...small })
    expect(dies.calls).toHaveLength(6)
    expect(report).toMatchObject({ verdict: 'inconclusive', exitCode: 2, recommendation: {} })
    expect(report.fatal).toBe(
      'fake stopped accepting connections (fetch failed: connect ECONNREFUSED); restart it and probe again',
    )
  })

  it('should keep a guard’s non-refusal failures unsafe, and never recommend from its ceiling', async () => {
    const refusal = 'HTTP 400: This request needs … the guard rejects rather than truncates …'
    const transport = fakeTransport((req, tokens) => {
      if (tokens > 16_000) {
        throw new ProbeTransportError('http', refusal, { status: 400, guard: 'refusal' })
      }
      // Answers through the guard, but one length comes back without its end needle.
      const content = tokens > 12_000 ? markersOf(req.prompt).start : undefined
      return answer(req.prompt, {
        guard: 'response-header',
        ...(content === undefined ? {} : { content }),
      })
    })
    const report = await runProbe({ transport, ...small })
    expect(report).toMatchObject({
      verdict: 'unsafe',
      exitCode: 1,
      recommendation: null,
      profile: null,
      guard: { signs: ['refusal', 'response-header'], quarantines: 0 },
    })
    expect(report.smallestFailure?.kind).toBe('missing-needle')
    const text = renderReport(report)
    expect(text).toContain('endpoint         a workers-ai-guard Worker')
    expect(text).toContain('The endpoint is a workers-ai-guard Worker, so this run measured')
  })

  it('should report progress before each request and after each judgement', async () => {
    const events: ProbeProgress[] = []
    const transport = limitTransport(Infinity, () => answer(''))
    await runProbe({ transport, ...small, maxRequests: 2, onProgress: (e) => events.push(e) })
    expect(events.map((e) => e.type)).toEqual(['send', 'result', 'send', 'result'])
    expect(events[2]).toMatchObject({ type: 'send', index: 2, tokens: 2048, largestOk: 1024 })
  })
})
