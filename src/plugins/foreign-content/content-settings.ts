/**
 * @module The `content` option group resolved: measured defaults (docs/fingerprints.md); a run
 * may be raised, never lowered below them. Throws a plain `Error` that names the bad option.
 */
import {
  type FingerprintStore,
  type ForeignContentOptions,
  integerOption,
  type RecallOptions,
} from '../../core'
import { FINGERPRINT_DEFAULTS } from './'
import { PUBLIC_BACKGROUND } from './public-background'

/** The foreign-content check as resolved. */
export interface ResolvedForeignContent {
  store: FingerprintStore | undefined
  publicTexts: readonly string[]
  table: { budgetBytes: number; ttlMs: number; commonAt: number; tenantShare: number }
  params: { n: number; w: number; k: number }
  recall: Required<RecallOptions> | undefined
}

/** Public texts: strings, 4 MiB of them at most (each is printed once per isolate). */
function resolvePublicTexts(texts: readonly string[] | undefined): readonly string[] {
  if (texts === undefined) return []
  if (!Array.isArray(texts) || texts.some((t) => typeof t !== 'string')) {
    throw new Error('option "content.publicTexts" must be an array of strings')
  }
  if (texts.reduce((sum, t) => sum + t.length, 0) > 4 * 1024 * 1024) {
    throw new Error('option "content.publicTexts" must hold at most 4 MiB of text')
  }
  return [...texts]
}

/** The foreign-content settings: measured defaults; a run may be raised, never lowered below them. */
export function resolveForeignContent(
  options: ForeignContentOptions | false | undefined,
): ResolvedForeignContent | undefined {
  if (options === false) return undefined
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new Error('option "content" must be an object or false')
  }
  const o = options ?? {}
  const store = o.store
  if (
    store !== undefined &&
    (typeof store.publish !== 'function' || typeof store.since !== 'function')
  ) {
    throw new Error('option "content.store" must have publish() and since()')
  }
  const d = FINGERPRINT_DEFAULTS
  return {
    store,
    // The built-in background first: licences are public whoever pastes them.
    publicTexts: [...PUBLIC_BACKGROUND, ...resolvePublicTexts(o.publicTexts)],
    table: {
      budgetBytes: integerOption('content.budgetBytes', o.budgetBytes ?? d.budgetBytes, 65_536),
      ttlMs: integerOption('content.ttlMs', o.ttlMs ?? d.ttlMs, 1_000),
      commonAt: integerOption('content.commonAt', o.commonAt ?? d.commonAt, 2, 4),
      tenantShare: d.tenantShare,
    },
    params: { n: d.n, w: d.w, k: integerOption('content.run', o.run ?? d.k, d.k, 64) },
    recall: resolveRecall(o.recall),
  }
}

/** The second opinion's bounds, checked once. */
function resolveRecall(
  options: RecallOptions | false | undefined,
): Required<RecallOptions> | undefined {
  if (options === false) return undefined
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new Error('option "content.recall" must be an object or false')
  }
  const o = options ?? {}
  return {
    perSourcePerHour: integerOption(
      'content.recall.perSourcePerHour',
      o.perSourcePerHour ?? 60,
      1,
      100_000,
    ),
    maxTokens: integerOption('content.recall.maxTokens', o.maxTokens ?? 512, 32, 8_192),
    cueChars: integerOption('content.recall.cueChars', o.cueChars ?? 160, 0, 2_000),
  }
}
