import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import * as full from '../../src'
import { BUILTIN_PROFILES, MemoryQuarantineStore } from '../../src'
import type { AiRunner } from '../../src/core/call/upstream'
import * as lean from '../../src/lean'

/**
 * The options grouped by concern: every name from before the grouping is refused when the guard is
 * built, through every way in of both entries, with an error that names where it moved; a silently
 * ignored old name would drop the setting it carried (a store, a release policy, a hook).
 */
const MODEL = '@cf/zai-org/glm-5.3'
const SECRET = 'moved-options-test-secret-0123456789abcdef'
const AI: AiRunner = { run: async () => ({ response: 'unused' }) }

type Entry = typeof lean

/** Old top-level name, a value it took, and where it lives now. */
const MOVED: [string, unknown, string][] = [
  ['unknownModels', 'refuse', 'ceiling.unknownModels'],
  ['defaultProfile', { ...BUILTIN_PROFILES[MODEL] }, 'ceiling.defaultProfile'],
  ['overflow', 'clamp-output', 'ceiling.overflow'],
  ['calibration', {}, 'ceiling.calibration'],
  ['textMemo', false, 'ceiling.textMemo'],
  ['echoRetries', 0, 'canary.echoRetries'],
  ['tenantDirectory', {}, 'canary.tenantDirectory'],
  ['minTimingEvidenceMs', 5, 'timing.minEvidenceMs'],
  ['wholeAnswers', 'as-is', 'timing.wholeAnswers'],
  ['timeouts', { idleMs: 1_000 }, 'timing.timeouts'],
  ['streamRelease', 'async', 'stream.release'],
  ['heartbeatMs', 15_000, 'stream.heartbeatMs'],
  ['maxHeldBytes', 4_096, 'stream.maxHeldBytes'],
  ['foreignContent', false, 'content'],
  ['quarantine', new MemoryQuarantineStore(), 'quarantine.store'],
  ['incidentWindowMs', 0, 'quarantine.incidentWindowMs'],
  ['onVerdict', () => {}, 'hooks.onVerdict'],
  ['now', () => 0, 'hooks.now'],
  ['requestId', () => 'id', 'hooks.requestId'],
]

/** Each way in with `options`: what it throws (undefined when it builds). */
function builds(entry: Entry, options: Record<string, unknown>): unknown[] {
  const opts = { secret: SECRET, ...options } as full.GuardOptions
  return [
    () => entry.createGuard(opts),
    () => entry.guardAi(AI, opts),
    () => new Hono().use(entry.aiGuard(opts)),
  ].map((make) => {
    try {
      make()
      return undefined
    } catch (error) {
      return error
    }
  })
}

/** `path` ('stream.release') as nested options with `value` at its end. */
function at(path: string, value: unknown): Record<string, unknown> {
  const [head, ...rest] = path.split('.')
  return { [head!]: rest.length === 0 ? value : at(rest.join('.'), value) }
}

describe('options moved into groups', () => {
  for (const [name, entry] of [
    ['default', full as Entry],
    ['lean', lean],
  ] as const) {
    for (const [old, value, now] of MOVED) {
      it(`should refuse "${old}" naming ${now} (${name} entry)`, () => {
        for (const error of builds(entry, { [old]: value })) {
          expect(error, old).toBeInstanceOf(Error)
          expect((error as Error).message).toBe(`option "${old}" moved: use ${now}`)
        }
      })
    }
  }

  it('should refuse an old name written inside a group, naming its new place', () => {
    for (const [old, value, now] of MOVED) {
      const group = now.includes('.') ? now.split('.')[0]! : 'stream'
      // The name did not change inside its group, or is the group itself (quarantine.store).
      if (now === `${group}.${old}` || old === 'quarantine') continue
      for (const error of builds(full as Entry, { [group]: { [old]: value } })) {
        expect(error, `${group}.${old}`).toBeInstanceOf(Error)
        expect((error as Error).message).toBe(`option "${group}.${old}" moved: use ${now}`)
      }
    }
  })

  it('should refuse a field a group does not have', () => {
    for (const error of builds(full as Entry, { stream: { relase: 'async' } })) {
      expect((error as Error).message).toBe(
        'option "stream" has no field "relase" (release, heartbeatMs, maxHeldBytes)',
      )
    }
  })

  it('should build with every setting at its new place (the lean entry with content off)', () => {
    for (const [name, entry] of [
      ['default', full as Entry],
      ['lean', lean],
    ] as const) {
      for (const [old, value, now] of MOVED) {
        // The lean entry refuses a content group other than false; `false` is what the table holds.
        const options = at(
          now,
          old === 'calibration' || old === 'tenantDirectory' ? undefined : value,
        )
        expect(builds(entry, options), `${now} (${name})`).toEqual([
          undefined,
          undefined,
          undefined,
        ])
      }
    }
  })
})
