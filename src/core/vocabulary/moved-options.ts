/**
 * @module The option names from before the grouping, refused with their new place: an old name
 * silently ignored would drop a setting (a store, a release policy) without a word.
 */

/** Old top-level name → its place now. */
const MOVED: Readonly<Record<string, string>> = {
  unknownModels: 'ceiling.unknownModels',
  defaultProfile: 'ceiling.defaultProfile',
  overflow: 'ceiling.overflow',
  calibration: 'ceiling.calibration',
  textMemo: 'ceiling.textMemo',
  echoRetries: 'canary.echoRetries',
  tenantDirectory: 'canary.tenantDirectory',
  minTimingEvidenceMs: 'timing.minEvidenceMs',
  wholeAnswers: 'timing.wholeAnswers',
  timeouts: 'timing.timeouts',
  streamRelease: 'stream.release',
  heartbeatMs: 'stream.heartbeatMs',
  maxHeldBytes: 'stream.maxHeldBytes',
  foreignContent: 'content',
  incidentWindowMs: 'quarantine.incidentWindowMs',
  onVerdict: 'hooks.onVerdict',
  now: 'hooks.now',
  requestId: 'hooks.requestId',
}

/** The fields of each group the guard itself resolves (`content` and `secrets` are the plug-ins'). */
const GROUPS: Readonly<Record<string, readonly string[]>> = {
  ceiling: ['unknownModels', 'defaultProfile', 'overflow', 'calibration', 'textMemo'],
  canary: ['echoRetries', 'tenantDirectory'],
  timing: ['minEvidenceMs', 'wholeAnswers', 'timeouts'],
  stream: ['release', 'heartbeatMs', 'maxHeldBytes'],
  quarantine: ['store', 'incidentWindowMs'],
  hooks: ['onVerdict', 'now', 'requestId'],
}

/** Methods of a `QuarantineStore`: an object with them passed as `quarantine` is the old store option. */
const STORE_METHODS = ['put', 'get', 'list', 'counts'] as const

/**
 * Throws for an old name at the top level or in a group, naming where it moved; and for a field a
 * group does not have.
 *
 * @example
 * refuseMoved({ secret, heartbeatMs: 15_000 }) // throws: option "heartbeatMs" moved: use stream.heartbeatMs
 */
export function refuseMoved(options: object): void {
  for (const name of Object.keys(options)) {
    const to = MOVED[name]
    if (to !== undefined) throw new Error(`option "${name}" moved: use ${to}`)
  }
  const quarantine = (options as { quarantine?: unknown }).quarantine
  if (
    quarantine !== null &&
    typeof quarantine === 'object' &&
    STORE_METHODS.some((m) => typeof (quarantine as Record<string, unknown>)[m] === 'function')
  ) {
    throw new Error('option "quarantine" moved: use quarantine.store')
  }
  for (const [group, fields] of Object.entries(GROUPS)) {
    const value = (options as Record<string, unknown>)[group]
    if (value === undefined) continue
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new Error(`option "${group}" must be an object of ${fields.join(', ')}`)
    }
    for (const name of Object.keys(value)) {
      if (fields.includes(name)) continue
      const to = MOVED[name]
      throw new Error(
        to === undefined
          ? `option "${group}" has no field "${name}" (${fields.join(', ')})`
          : `option "${group}.${name}" moved: use ${to}`,
      )
    }
  }
}
