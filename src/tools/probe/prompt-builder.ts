/**
 * @module Probe prompts: random filler of an exact o200k length, a fresh needle on the very first and
 * the very last line, and an instruction to reply with both.
 *
 * Why needles at both ends: a placeholder path that keeps one token of the prompt, or
 * `--allow-auto-truncate` keeping its beginning, never lets the model read the end. An answer that
 * names both needles proves the model read this prompt from its first line to its last. Why a tag on
 * every filler line: a decode that reads pages other requests wrote quotes their text; pages of an
 * earlier probe request carry that request's tag on every line, so any span of them quoted in an
 * answer is attributable — "foreign content", a leak proven by the answer alone.
 * Nothing here is user data: words are drawn at random from a fixed neutral list.
 */
import { countTokens } from '../../core'
import type { Rng } from './random'

/** Crockford base32 (no I, L, O, U): unambiguous to read back, one alphabet for every marker. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/**
 * Matches any needle this probe mints (global: use with `matchAll`).
 *
 * @example
 * for (const m of answer.matchAll(NEEDLE_PATTERN)) seen.add(m[0].toUpperCase())
 */
export const NEEDLE_PATTERN = /NEEDLE-[0-9A-HJKMNP-TV-Z]{10}/gi

/**
 * Neutral, common words. Each costs one o200k token after a space (checked when the builder loads;
 * words that do not are dropped), and at most 7 letters, so a filler line stays under 90 characters.
 */
const WORDS = (
  'able acid aged also area army away baby back ball band bank base bath bear beat bell belt ' +
  'bird blue boat body bone book boot born both bowl bread brick bridge bright brown build ' +
  'cake calm camp card care cart case cash cast chair chalk cheap chest child city clay clean ' +
  'clock cloud coal coast coat cold cook cool copy corn cost cotton count cover crowd cup ' +
  'dark date dawn deep desk door down draw dream dress drink drive dry dust early earth east ' +
  'easy edge even face fact fair farm fast field fine fire fish flag flat floor flow food foot ' +
  'forest frame fresh fruit full game garden gate glass gold grass great green ground group ' +
  'hall hand hard hat head heat hill hold home horse hour house iron island join jump key ' +
  'kind lake lamp land large late lead leaf left light line lion list long loud low main map ' +
  'market metal milk mind moon morning mountain music name near nest night noise north note ' +
  'ocean office open orange owner page paint paper park path pencil piano plain plant plate ' +
  'pocket port quiet rain river road rock roof room round salt sand school sea season seed ' +
  'shade sheep shell ship shoe short silver simple sky sleep slow small smooth snow soft ' +
  'song sound south space spring square stage star station steam steel stone storm street ' +
  'summer sun table tall tea tent thin tide tiny tower town trade train tree valley village ' +
  'wall warm watch water wave west wheel white wide wild wind window winter wood word yard yellow'
)
  .split(' ')
  .filter((w) => w.length <= 7)

/** One probe prompt, ready to send as a single user message. */
export interface ProbePrompt {
  /** The whole message text. */
  text: string
  /** Its exact o200k_base token count. */
  tokens: number
  /** The needle on the very first line. */
  startNeedle: string
  /** The needle on the very last line. */
  endNeedle: string
  /** The marker that starts every filler line of this prompt (attributes quoted filler). */
  tag: string
}

/** Builds probe prompts of exact o200k lengths. */
export interface PromptBuilder {
  /** Smallest length a prompt can have (needles, instruction and one filler line). */
  readonly minTokens: number
  /**
   * A prompt of exactly `tokens` o200k tokens (throws a `RangeError` below {@link minTokens}).
   * Needles, tag and filler come from `rng`; every call draws fresh ones.
   */
  build(tokens: number, rng: Rng): Promise<ProbePrompt>
}

/**
 * The instruction, placed just before the last line. It names the needles' shape but no needle, so
 * the only way to answer is to have read the first and the last line.
 */
export const INSTRUCTION =
  'That was filler text. The first line of this message holds a code that starts with NEEDLE-, ' +
  'and the last line holds another one. Reply with both codes, the first line code first, and ' +
  'nothing else.'

/**
 * A fresh needle: `NEEDLE-` and 10 Crockford base32 characters (50 bits: never guessed, never reused).
 *
 * @example
 * mintNeedle(seededRng(1)) // 'NEEDLE-…'
 */
export function mintNeedle(rng: Rng): string {
  return `NEEDLE-${rng.chars(ALPHABET, 10)}`
}

/**
 * A fresh filler tag: `ref` and 9 random digits (30 bits). Digits, because every BPE tokenizer in use
 * splits a digit run by a fixed rule whatever the digits (o200k, cl100k, Llama 3 and DeepSeek-V3 in
 * groups of up to three; Qwen3 and Gemma 3 one by one), so every tag costs the same as any other in
 * the target's tokens and the target's count of a prompt is a steady multiple of its o200k length;
 * random letters would not be (o200k and the target's tokenizer would split each tag differently).
 * Where the two rules differ (a tag is 4 o200k tokens, 10 Qwen3 ones), that multiple still moves a
 * little with each prompt's mix of line lengths: see `RATIO_NOISE`.
 * Unlike a needle in shape, so a model asked for "codes" is not tempted by it.
 *
 * @example
 * mintTag(seededRng(1)) // 'ref' + 9 digits
 */
export function mintTag(rng: Rng): string {
  return `ref${rng.chars('0123456789', 9)}`
}

let loading: Promise<PromptBuilder> | undefined

/**
 * The prompt builder, loaded once (it loads gpt-tokenizer's o200k_base on first use).
 *
 * Exactness: the o200k pre-tokenizer never joins a piece across a line break that follows a letter
 * or digit, nor a space to the word before it, so the count of a prompt is the sum of the counts of
 * its head, its lines and its tail; each line is tag + words + newline, each word one token.
 *
 * @example
 * const builder = await loadPromptBuilder()
 * const prompt = await builder.build(4096, seededRng(7))
 * prompt.tokens // 4096
 */
export function loadPromptBuilder(): Promise<PromptBuilder> {
  loading ??= createBuilder().catch((error: unknown) => {
    loading = undefined
    throw error
  })
  return loading
}

async function createBuilder(): Promise<PromptBuilder> {
  const words: string[] = []
  for (const word of WORDS) if ((await countTokens([` ${word}`])) === 1) words.push(word)
  if (words.length < 64) throw new Error('the o200k tokenizer split too many filler words')
  const newline = await countTokens(['\n'])
  // Head, tail and tag counts vary with their random characters; the minimum assumes the worst case
  // (one token per character), so every draw can reach it.
  const tailFixed = await countTokens([`${INSTRUCTION}\n`])
  const needleMax = 'NEEDLE-'.length + 10
  const minTokens = needleMax + newline + tailFixed + needleMax + (10 + 1 + newline)
  return {
    minTokens,
    async build(tokens, rng) {
      if (!Number.isInteger(tokens) || tokens < minTokens) {
        throw new RangeError(`a probe prompt needs at least ${minTokens} tokens (asked: ${tokens})`)
      }
      const startNeedle = mintNeedle(rng)
      const endNeedle = mintNeedle(rng)
      const tag = mintTag(rng)
      const head = `${startNeedle}\n`
      const tail = `${INSTRUCTION}\n${endNeedle}`
      const fixed = await countTokens([head, tail])
      const tagTokens = await countTokens([tag])
      const lineTokens = (k: number): number => tagTokens + k + newline
      let remaining = tokens - fixed
      if (remaining < lineTokens(1)) throw new RangeError(`${tokens} tokens is too short a prompt`)
      const parts: string[] = [head]
      while (remaining > 0) {
        let k = rng.int(6, 10)
        // The rest would not make a line of its own: this line takes all of it.
        if (remaining - lineTokens(k) < lineTokens(1)) k = remaining - tagTokens - newline
        let line = tag
        for (let i = 0; i < k; i++) line += ` ${words[rng.int(0, words.length - 1)]}`
        parts.push(`${line}\n`)
        remaining -= lineTokens(k)
      }
      parts.push(tail)
      return { text: parts.join(''), tokens, startNeedle, endNeedle, tag }
    },
  }
}
