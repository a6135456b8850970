/**
 * @module What of the guard's secrets a withheld answer may keep once it is sealed for review: none.
 * Every piece of 8 (`PIECE_LENGTH`) or more characters of a canary or prefix marker the guard can
 * name is replaced before the record is written — this request's canary and its tenant's marker, any
 * whole canary in the text (another request's: its pieces elsewhere in the text go too), and the
 * marker of any tenant in this isolate's book one of whose anchors the text holds.
 *
 * Why at sealing: only the guard knows these tokens, and only while it holds the request. A console
 * that redacts by pattern when a page is drawn sees `ry_py8q…` and cannot tell it from prose; a copy
 * of a canary on screen could be pasted into a prompt and replayed as "proof" of a leak.
 */
import { FOREIGN_ANCHOR } from './marker-book'
import { PieceCutter } from './pieces'
import { type CanaryKey, markerBook } from './token'

/** What a redacted piece reads as. */
const REDACTED = '[canary]'

/** Whole canary-shaped tokens, any case. */
const TOKEN = /cnry_[0-9a-hjkmnp-tv-z]{24}/gi
/** Runs of a marker body's characters long enough to hold an anchor. */
const BODY_RUN = new RegExp(`[0-9a-hjkmnp-tv-z]{${FOREIGN_ANCHOR},}`, 'gi')

/**
 * `texts` (per channel) with every piece of `own` and of the other secrets the guard can name in them
 * replaced by `[canary]`: what {@link redactTokenPieces} cuts, and the markers of this isolate's book
 * one of whose anchors the texts hold.
 *
 * @example
 * const sealed = await redactSecretPieces(key, [canary, marker], { content: answer })
 */
export async function redactSecretPieces(
  key: CanaryKey,
  own: readonly string[],
  texts: Record<string, string>,
): Promise<Record<string, string>> {
  const secrets = [...own]
  const book = await markerBook(key)
  if (book.size > 0) {
    for (const text of Object.values(texts)) {
      for (const run of text.matchAll(BODY_RUN)) {
        const lower = run[0].toLowerCase()
        for (let at = 0; at + FOREIGN_ANCHOR <= lower.length; at++) {
          const entry = book.find(lower.slice(at, at + FOREIGN_ANCHOR))
          if (entry) secrets.push(entry.marker)
        }
      }
    }
  }
  return redactTokenPieces(texts, secrets)
}

/**
 * `texts` with every whole canary-shaped token, and every piece of 8 or more characters of such a
 * token or of `secrets`, replaced by `[canary]` — wherever in the texts the piece is: a canary quoted
 * whole once and cut short elsewhere loses both. Look-alikes count as canaries here: hiding a piece of
 * one costs nothing, and telling them apart would need the key.
 *
 * @example
 * redactTokenPieces({ content: `${canary} … ${canary.slice(9, 20)}` }) // '[canary] … [canary]'
 */
export function redactTokenPieces(
  texts: Partial<Record<string, string>>,
  secrets: readonly string[] = [],
): Record<string, string> {
  const known = new Set(secrets.map((token) => token.toLowerCase()))
  for (const text of Object.values(texts)) {
    for (const m of text?.matchAll(TOKEN) ?? []) known.add(m[0].toLowerCase())
  }
  const out: Record<string, string> = {}
  for (const [channel, text] of Object.entries(texts)) {
    if (text === undefined) continue
    if (known.size === 0) {
      out[channel] = text
      continue
    }
    const { cuts } = new PieceCutter([...known]).feed(text, 0)
    out[channel] = replaced(text, cuts)
  }
  return out
}

/** `text` with each range (sorted, disjoint, as the cutter gives them) replaced by {@link REDACTED}. */
function replaced(text: string, cuts: readonly { start: number; end: number }[]): string {
  let out = ''
  let at = 0
  for (const { start, end } of cuts) {
    if (start < at) continue
    out += text.slice(at, start) + REDACTED
    at = end
  }
  return out + text.slice(at)
}
