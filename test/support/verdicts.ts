/**
 * @module Log capture for tests: a guard given {@link recordVerdicts}' `onVerdict` logs into an array
 * the test can assert on, instead of printing a JSON line per refusal and quarantine; warnings a test
 * provokes on purpose are captured by {@link captureWarnings}.
 */
import { afterEach, beforeEach, type MockInstance, vi } from 'vitest'
import type { VerdictLog } from '../../src'

/** The verdicts one guard (or several sharing the hook) logged, oldest first. */
export interface VerdictRecorder {
  /** Every verdict since the recorder was made or last cleared. */
  readonly events: VerdictLog[]
  /**
   * The hook to pass as `onVerdict`. One function per recorder, never a new one per call: guardAi keys
   * its isolate guards on option identity, so a fresh function each request would mean a fresh guard.
   */
  readonly onVerdict: (event: VerdictLog) => void
  /** The verdicts with this action. */
  of(action: VerdictLog['action']): VerdictLog[]
  /** Forgets what was recorded (between iterations of one test). */
  clear(): void
}

/**
 * A recorder whose `onVerdict` replaces the guard's default logger (console.warn of every refusal).
 *
 * @example
 * const verdicts = recordVerdicts()
 * const ai = guardAi(upstream, { secret, models, hooks: { onVerdict: verdicts.onVerdict } })
 * await expect(ai.run(model, tooLong)).rejects.toThrow()
 * expect(verdicts.of('reject')[0]?.reasons).toEqual(['context_length_exceeded'])
 */
export function recordVerdicts(): VerdictRecorder {
  const events: VerdictLog[] = []
  return {
    events,
    onVerdict: (event) => {
      events.push(event)
    },
    of: (action) => events.filter((event) => event.action === action),
    clear: () => {
      events.length = 0
    },
  }
}

/**
 * Captures, instead of printing, the console.warn lines matching `pattern` during every test of the
 * calling file or `describe` (hooks registered here); any other warning still reaches the console.
 * For warnings a test provokes on purpose, such as guardAi's notice that one isolate saw more than 8
 * option sets when every test builds a fresh guard.
 *
 * @example
 * const warned = captureWarnings(/more than \d+ different option sets/)
 */
export function captureWarnings(pattern: RegExp): { readonly lines: string[] } {
  const lines: string[] = []
  let spy: MockInstance<typeof console.warn> | undefined
  beforeEach(() => {
    const real = console.warn.bind(console)
    spy = vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
      const text = args.map(String).join(' ')
      if (pattern.test(text)) lines.push(text)
      else real(...args)
    })
  })
  afterEach(() => {
    spy?.mockRestore()
  })
  return { lines }
}

/** One verdict line of the Worker's log (src/worker/config.ts): `ai_guard_verdict` and the verdict. */
export type WorkerVerdict = VerdictLog & { event: 'ai_guard_verdict' }

/**
 * Captures, instead of printing, the Worker's verdict lines (console.log of `ai_guard_verdict` JSON)
 * during every test of the calling file or `describe`, parsed; any other console.log still prints.
 * The Worker runs in the test's isolate under `SELF.fetch`, so its console is the test's.
 *
 * @example
 * const logged = captureWorkerVerdicts()
 * await post('/v1/chat/completions', body, KEY_B)
 * expect(logged.events.at(-1)?.action).toBe('quarantine')
 */
export function captureWorkerVerdicts(): { readonly events: WorkerVerdict[] } {
  const events: WorkerVerdict[] = []
  let spy: MockInstance<typeof console.log> | undefined
  beforeEach(() => {
    events.length = 0
    const real = console.log.bind(console)
    spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      const verdict = args.length === 1 ? workerVerdict(args[0]) : undefined
      if (verdict) events.push(verdict)
      else real(...args)
    })
  })
  afterEach(() => {
    spy?.mockRestore()
  })
  return { events }
}

function workerVerdict(line: unknown): WorkerVerdict | undefined {
  if (typeof line !== 'string' || !line.startsWith('{"event":"ai_guard_verdict"')) return undefined
  try {
    return JSON.parse(line) as WorkerVerdict
  } catch {
    return undefined
  }
}
