/**
 * `workers-ai-guard directive` as a user runs it: over HTTP against the simulator's OpenAI-compatible
 * route, its plan without sending anything, its JSON report, and its refusals of bad input.
 */
import { describe, expect, it } from 'vitest'
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import { directiveCommand } from '../../src/tools/directive/directive-command'
import { recommend } from '../../src/tools/directive/recommendation'
import type { CommandIo } from '../../src/tools/probe/command'

function io(fetcher?: typeof fetch): CommandIo & { out: string; err: string; calls: number } {
  const state = { out: '', err: '', calls: 0 }
  return Object.assign(state, {
    env: {},
    stdout: (t: string) => {
      state.out += t
    },
    stderr: (t: string) => {
      state.err += t
    },
    isTTY: false,
    ...(fetcher
      ? {
          fetch: ((input: RequestInfo | URL, init?: RequestInit) => {
            state.calls++
            return fetcher(input, init)
          }) as typeof fetch,
        }
      : {}),
  })
}

const SMALL = [
  '--formats',
  'plain,json',
  '--deliveries',
  'stream',
  '--scripts',
  'latn',
  '--lengths',
  '200',
  '--samples',
  '2',
]

function simFetch(config: ConstructorParameters<typeof SimEngine>[0] = {}): typeof fetch {
  const handle = simFetchHandler(
    new SimEngine({ mode: 'fixed', decodeTokensPerSecond: Infinity, ...config }),
  )
  return ((input: RequestInfo | URL, init?: RequestInit) =>
    handle(new Request(input, init))) as typeof fetch
}

describe('workers-ai-guard directive', () => {
  it('prints its plan and sends nothing with --dry-run', async () => {
    const run = io(simFetch())
    expect(
      await directiveCommand(['--dry-run', '--json', '--url', 'http://sim/v1', ...SMALL], run),
    ).toBe(0)
    const plan = JSON.parse(run.out)
    expect(plan.requests).toBe(6) // (2 wordings + JSON mode) × 2 samples
    expect(plan.cells).toEqual([
      'plain stream latn 200 reply-first',
      'plain stream latn 200 note-first',
      'json stream latn 200',
    ])
    expect(run.calls).toBe(0)
  })

  it('measures over HTTP and prints the profile as GUARD_MODELS JSON', async () => {
    const run = io(simFetch({ directiveQuoteRate: 1 }))
    expect(await directiveCommand(['--url', 'http://sim/v1', '--json', ...SMALL], run)).toBe(0)
    expect(run.calls).toBe(6)
    const report = JSON.parse(run.out)
    expect(report.wordings.map((w: { restateRate: number }) => w.restateRate)).toEqual([1, 1])
    expect(report.json).toEqual({ answers: 2, echoRate: 1, lateRate: 0 })
    expect(JSON.parse(report.recommendation.env.GUARD_MODELS)).toEqual({
      '@cf/zai-org/glm-5.3': { echo: 'require', directive: 'reply-first' },
    })
    const text = io(simFetch({ directiveQuoteRate: 1 }))
    await directiveCommand(['--url', 'http://sim/v1', ...SMALL], text)
    expect(text.out).toContain(
      `GUARD_MODELS='{"@cf/zai-org/glm-5.3":{"echo":"require","directive":"reply-first"}}'`,
    )
  })

  it('exits 1 for a model that ignores the directive', async () => {
    const run = io(simFetch({ echoIgnoreRate: 1 }))
    expect(await directiveCommand(['--url', 'http://sim/v1', ...SMALL], run)).toBe(1)
    expect(run.out).toContain('"echo":"scan-only"')
  })

  it.each([
    [['--samples', 'two', '--url', 'http://x/v1'], '--samples must be a whole number'],
    [['--formats', 'xml', '--url', 'http://x/v1'], 'formats must be among plain, json, tools'],
    [
      ['--wordings', 'shout', '--url', 'http://x/v1'],
      'wordings must be among reply-first, note-first',
    ],
    [['--json'], '--url is required'],
    [['--bogus'], "Unknown option '--bogus'"],
    [['--url', 'ftp://x'], 'url must be an http(s) URL'],
  ])('refuses %j with a clear error and exit 2', async (args, message) => {
    const run = io(simFetch())
    expect(await directiveCommand(args, run)).toBe(2)
    expect(run.err).toContain(message)
    expect(run.out).toBe('')
    expect(run.calls).toBe(0)
  })

  it('stops at a fatal status with exit 2, naming it', async () => {
    const run = io(
      (async () => new Response('{"error":"bad key"}', { status: 401 })) as unknown as typeof fetch,
    )
    expect(await directiveCommand(['--url', 'http://sim/v1', ...SMALL], run)).toBe(2)
    expect(run.err).toContain('HTTP 401: bad key')
    expect(run.calls).toBe(1)
  })
})

describe('the recommended wording', () => {
  const summary = (wording: 'reply-first' | 'note-first', tokensToProof: number, ms: number) => ({
    wording,
    answers: 4,
    echoRate: 1,
    restateRate: 1,
    noProofRate: 0,
    tokensToProof,
    reasoningTokens: 200,
    echoTokens: 20,
    firstByteMs: { verified: ms, async: 0 },
    firstContentMs: 0,
  })
  const settings = { minEchoRate: 0.9, latencyBudgetMs: 2000, acceptAsync: false }

  it('stays reply-first when the waits differ by rounding (30 and 26 tokens at 51,589 tokens/s)', () => {
    const r = recommend(
      [summary('reply-first', 30, 1), summary('note-first', 26, 0)],
      settings,
      'm',
    )
    expect(r.profile.directive).toBe('reply-first')
  })

  it('moves to note-first when it halves the wait', () => {
    const r = recommend(
      [summary('reply-first', 300, 6), summary('note-first', 120, 2)],
      settings,
      'm',
    )
    expect(r.profile.directive).toBe('note-first')
  })
})
