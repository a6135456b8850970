/**
 * @module The labelled corpus of the secret detectors, generated deterministically: documents of
 * realistic lines, each secret labelled with its kind and span, among hard negatives (hashes, UUIDs,
 * base64 blobs, long identifiers, log lines, near misses that fail one check) — and the scoring of a
 * detector list against it (per kind: true and false positives, misses, precision, recall).
 */
import { findSecrets, type SecretDetector, type SecretSpan } from '../../src/plugins/secrets'
import { GENERATORS, NEGATIVES, pick, type Rand, rng } from './generate'

/** One document and the secrets in it. */
export interface LabelledDocument {
  text: string
  labels: SecretSpan[]
}

/** Contexts a secret of any kind may sit in besides its realistic line (no keyword in them). */
const PLAIN_CONTEXTS = [
  '{"name": "deploy", "value": "$", "enabled": true}',
  'I think the value is $ but I am not sure it still works.',
  '  - $',
]

/**
 * `documents` documents of 6–12 lines: about a third secrets (in their realistic line, or one of
 * {@link PLAIN_CONTEXTS} when `plainContexts`), the rest hard negatives.
 *
 * @example
 * const corpus = labelledCorpus(1, 500, true)
 */
export function labelledCorpus(
  seed: number,
  documents: number,
  plainContexts: boolean,
): LabelledDocument[] {
  const r = rng(seed)
  const generators = Object.values(GENERATORS)
  const negatives = Object.values(NEGATIVES)
  const out: LabelledDocument[] = []
  for (let d = 0; d < documents; d++) {
    let text = ''
    const labels: SecretSpan[] = []
    const lines = 6 + Math.floor(r() * 7)
    for (let l = 0; l < lines; l++) {
      if (l > 0) text += '\n'
      if (r() < 0.35) {
        const { kind, value, line } = pick(r, generators)(r)
        // A URL password is a password only inside its URL: it has no plain context.
        const plain = plainContexts && kind !== 'url-password' && r() < 0.5
        const context = plain ? pick(r, PLAIN_CONTEXTS) : line
        const start = text.length + context.indexOf('$')
        labels.push({ kind, start, end: start + value.length })
        text += context.replace('$', value)
      } else {
        text += pick(r, negatives)(r)
      }
    }
    out.push({ text, labels })
  }
  return out
}

/** A kind's score on a corpus. */
export interface KindScore {
  kind: string
  truePositives: number
  falsePositives: number
  misses: number
  precision: number
  recall: number
}

/**
 * Scores `detectors` (all at once, overlaps resolved as in production) on `corpus`: a finding is a
 * true positive when a label has its kind and exactly its span.
 *
 * @example
 * const scores = scoreCorpus(labelledCorpus(1, 100, false), builtInDetectors())
 */
export function scoreCorpus(
  corpus: readonly LabelledDocument[],
  detectors: readonly SecretDetector[],
): KindScore[] {
  const tally = new Map<string, { tp: number; fp: number; fn: number }>()
  const of = (kind: string) => {
    let t = tally.get(kind)
    if (!t) {
      t = { tp: 0, fp: 0, fn: 0 }
      tally.set(kind, t)
    }
    return t
  }
  for (const { text, labels } of corpus) {
    const found = findSecrets(text, detectors)
    const key = (s: SecretSpan) => `${s.kind}:${s.start}:${s.end}`
    const labelled = new Set(labels.map(key))
    const hits = new Set(found.map(key))
    for (const span of found) of(span.kind)[labelled.has(key(span)) ? 'tp' : 'fp']++
    for (const label of labels) if (!hits.has(key(label))) of(label.kind).fn++
  }
  return [...tally]
    .map(([kind, { tp, fp, fn }]) => ({
      kind,
      truePositives: tp,
      falsePositives: fp,
      misses: fn,
      precision: tp + fp === 0 ? 1 : tp / (tp + fp),
      recall: tp + fn === 0 ? 1 : tp / (tp + fn),
    }))
    .sort((a, b) => a.kind.localeCompare(b.kind))
}

export type { Rand }
