/**
 * @module What a responder should do next, per reason an answer was withheld.
 */

/** One reason as the console explains it. */
interface ReasonGuide {
  /** A short title. */
  title: string
  /** What the reason means, in one or two sentences. */
  meaning: string
  /** Next steps, in order. */
  steps: string[]
}

const GUIDES: Record<string, ReasonGuide> = {
  foreign_canary: {
    title: 'Another request’s canary in the answer',
    meaning:
      'The answer carried a canary minted for a different request: proof that the engine decoded memory another request’s prefill wrote. The source tenants below are whose prompt leaked.',
    steps: [
      'Treat it as a confirmed cross-tenant leak: the text below is the source tenant’s data. Keep this record; do not paste the text anywhere else.',
      'Tell each source tenant that part of a prompt they sent was served to another request and withheld before delivery (nothing reached the other tenant).',
      'Check the model’s pool figure: the prompt size below against the profile’s kvPoolTokens. A prompt over the real pool that passed the ceiling means the profile is too large: lower kvPoolTokens (GUARD_MODELS) to the measured pool (`npm run probe`).',
      'Look for more incidents of the same model in the last hours (the list, filtered by model): a burst means the engine is in a bad state; open a case with the provider with the request ids and times.',
    ],
  },
  foreign_stand_in: {
    title: 'Another request’s secret stand-in in the answer',
    meaning:
      'The answer carried the stand-in the guard sent in place of a secret of a different request (an API key, a card number…): proof, like a foreign canary, that the engine decoded memory another request’s prefill wrote. The stand-in was never turned back into that secret; the kind is in the findings below.',
    steps: [
      'Treat it as a confirmed cross-tenant leak of the source tenant’s prompt. Its secret itself did not leak: the engine only ever saw the stand-in.',
      'Tell each source tenant that part of a prompt they sent was served to another request and withheld before delivery; the rest of that prompt (not its substituted secrets) may be in the text below.',
      'Check the model’s pool figure and recent incidents of the model as for a foreign canary.',
    ],
  },
  foreign_content: {
    title: 'Another tenant’s prompt text in the answer',
    meaning:
      'A run of the answer matched fingerprints of a prompt another tenant sent: the engine served that tenant’s text even though no canary survived.',
    steps: [
      'Treat it as a probable leak of the source tenant’s data; the figures (longest run, matches) say how much matched.',
      'Tell the source tenant what leaked and that it was withheld.',
      'Check the pool figure and recent incidents of the model as for a foreign canary; a run near the minimum span with few matches is worth a second look before escalating.',
    ],
  },
  ttft_impossible: {
    title: 'First token faster than a real prefill',
    meaning:
      'The first token came sooner than the model can read a prompt this long (tokens ÷ maxPrefillTokensPerSecond): the answer was not computed from this prompt — a placeholder, or a cached answer to something else.',
    steps: [
      'Compare the TTFT with the physical bound on the overview’s scatter: a point far under the line is a placeholder; one just under it may be a profile whose maxPrefillTokensPerSecond is too low for faster hardware.',
      'If the engine reported cached tokens, check whether this tenant sent the same long prefix recently (a legitimate cache hit is explained by the prefix record).',
      'If honest answers cluster just under the line, raise maxPrefillTokensPerSecond for the model after measuring it; never raise it to silence a far-off point.',
    ],
  },
  usage_undercount: {
    title: 'The engine read fewer tokens than the prompt has',
    meaning:
      'The engine’s usage.prompt_tokens is below the lowest count any tokenizer of the model gives: it did not read the whole prompt (truncated, or answered from another prompt).',
    steps: [
      'Check the prompt size against the pool: truncation at the pool boundary is the incident’s signature.',
      'Lower kvPoolTokens if prompts just over the pool reach the engine.',
    ],
  },
  echo_missing_repeatedly: {
    title: 'No echo, again after retries',
    meaning:
      'The answer never restated this request’s canary, even after the allowed retries: the model did not read the end of the prompt, systematically.',
    steps: [
      'Look for truncation: prompts of this size near the pool boundary lose their end first.',
      'If the model legitimately ignores instructions (a tool-call or JSON mode it was not told about), check the request’s shape before suspecting the engine.',
    ],
  },
  echo_missing: {
    title: 'No echo of this request’s canary',
    meaning:
      'The answer did not restate the canary placed at the end of the prompt: it may have been generated without reading the prompt’s end. Weak evidence alone; withheld because other evidence joined it.',
    steps: [
      'Read the other reasons first: echo_missing with a foreign canary or an impossible TTFT is a leak; alone it is usually truncation.',
      'Check whether the tenant’s prompts are near the pool or window size.',
    ],
  },
  echo_cut_off: {
    title: 'Answer ended before the echo',
    meaning:
      'The answer hit its output limit before any visible reply, so the echo could not be checked.',
    steps: ['Usually the client’s max_tokens is too small for a reasoning model: tell the tenant.'],
  },
  cache_unexplained: {
    title: 'Cached tokens nobody sent',
    meaning:
      'The engine reported cached prompt tokens this tenant never sent as a prefix: under per-tenant cache isolation, a sign it read another tenant’s cache.',
    steps: [
      'Check the source tenants and any canary findings: a cache hit on another tenant’s prefix is a leak.',
      'Confirm with the provider whether prefix caching is isolated per account.',
    ],
  },
  store_failed: {
    title: 'The quarantine store failed',
    meaning: 'The answer was withheld, but recording it failed once; this record may be partial.',
    steps: [
      'Check the D1 binding and QUARANTINE_KEY; see the Worker’s logs for ai_guard_error lines.',
    ],
  },
}

/**
 * The guide for `reason`; a generic one for reasons this console does not know yet.
 *
 * @example
 * guideFor('foreign_canary').steps[0]
 */
export function guideFor(reason: string): ReasonGuide {
  return (
    GUIDES[reason] ?? {
      title: reason,
      meaning: 'A reason this console has no guide for.',
      steps: [
        'Read the figures and the withheld text; see docs/console.md for the reasons it knows.',
      ],
    }
  )
}

/**
 * Every reason the console has a guide for (the incident list's reason filter offers these).
 *
 * @example
 * KNOWN_REASONS.includes('foreign_canary') // true
 */
export const KNOWN_REASONS: readonly string[] = Object.keys(GUIDES)
