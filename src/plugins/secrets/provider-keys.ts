/**
 * @module Detectors of provider API keys by their published formats. Each regex only proposes; the
 * check confirms with what the format offers: GitHub's and npm's CRC-32, OpenAI's `T3BlbkFJ` marker
 * (base64 of "OpenAI", in every key OpenAI issues), AWS's base32 alphabet, a keyword nearby for the
 * formats that are just 40 random characters (Cloudflare API tokens, AWS secret access keys).
 */
import { githubChecksum } from './checksums'
import {
  KEY_RUN,
  keywordDetector,
  mixedClasses,
  regexDetector,
  type SecretDetector,
  TOKEN_RUN,
  tokenEnd,
  tokenStart,
} from './detector'

/**
 * A prefixed key's pattern: it starts on the shared token boundary (so after `_`, `-`, a comma, a
 * quote or an escape as after a space: the prefix is what makes it a key) and does not run on into
 * `run`, its own alphabet — base64url for most; letters and digits for the kinds whose body holds
 * no `_` (GitHub, Stripe, AWS key ids), so `ghp_…_` or `AKIA…_old` still end the key at the `_`.
 */
function prefixed(body: string, run: string = KEY_RUN): RegExp {
  return new RegExp(`${tokenStart()}${body}${tokenEnd(run)}`, 'g')
}

/** OpenAI: `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` keys carry `T3BlbkFJ` in the middle. */
const openAi = regexDetector(
  'openai-key',
  'high',
  prefixed('sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{40,220}'),
  (m) => m[0].includes('T3BlbkFJ'),
)

/** Anthropic: `sk-ant-api03-` (or `admin01-`, `oat01-`) + ~93 base64url characters ending in `AA`. */
const anthropic = regexDetector(
  'anthropic-key',
  'high',
  prefixed('sk-ant-(?:api|admin|oat)\\d\\d-[A-Za-z0-9_-]{80,120}AA'),
)

/**
 * GitHub's classic tokens (`ghp_` personal, `gho_` OAuth, `ghu_` user-to-server, `ghs_` server, `ghr_`
 * refresh) and npm's `npm_` tokens: 30 random base62 characters and the base62 CRC-32 of them.
 */
const github = regexDetector(
  'github-token',
  'high',
  prefixed('(?:gh[pousr]|npm)_[A-Za-z0-9]{36}', TOKEN_RUN),
  (m) => githubChecksum(m[0].slice(4, 34)) === m[0].slice(34),
)

/** GitHub's fine-grained tokens: `github_pat_` + 22 + `_` + 59 base62 (no published checksum). */
const githubPat = regexDetector(
  'github-token',
  'high',
  prefixed('github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}', TOKEN_RUN),
)

/** Stripe secret and restricted keys, live and test (publishable `pk_` keys are public). */
const stripe = regexDetector(
  'stripe-key',
  'high',
  prefixed('(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}', TOKEN_RUN),
  (m) => mixedClasses(m[0].slice(8)),
)

/** Slack: `xoxb-` bot, `xoxp-` user, `xoxa-`/`xoxr-` refresh, `xoxs-`, `xoxo-`: numeric ids, then a secret. */
const slack = regexDetector(
  'slack-token',
  'high',
  prefixed('xox[abposr]-(?:\\d{1,15}-){1,4}[A-Za-z0-9]{16,64}', `${TOKEN_RUN}-`),
)

/** Google API keys: `AIza` + 35 base64url characters. */
const google = regexDetector('google-api-key', 'high', prefixed('AIza[0-9A-Za-z_-]{35}'))

/** AWS access key ids (`AKIA` long-term, `ASIA` temporary): 16 more characters of base32. */
const awsKeyId = regexDetector(
  'aws-access-key-id',
  'high',
  prefixed('(?:AKIA|ASIA)[A-Z2-7]{16}', TOKEN_RUN),
)

/** `aws` as a word (not inside a random string), `secret access`, or a key id. */
const AWS_SECRET_CONTEXT = /(?<![a-z0-9])aws(?![a-z0-9])|secret.?access|(?:AKIA|ASIA)[A-Z2-7]{16}/gi

/** AWS secret access keys: 40 base64 characters — only next to a key id or an AWS keyword. */
const awsSecret = keywordDetector({
  kind: 'aws-secret-access-key',
  confidence: 'medium',
  keywords: AWS_SECRET_CONTEXT,
  token: /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
  reach: 120,
  maxToken: 40,
  check: (token) => mixedClasses(token, true),
})

const CLOUDFLARE_CONTEXT = /cloudflare|(?<![a-z0-9])cf[_-]|wrangler|api[_ -]?token|bearer/gi

/**
 * Cloudflare API tokens: 40 characters of `[A-Za-z0-9_-]` with no prefix, so the format alone is weak
 * (any 40-character identifier matches): only with a Cloudflare keyword, `api_token` or `Bearer` in
 * the 80 characters before, and mixed character classes (drops hex digests).
 */
const cloudflare = keywordDetector({
  kind: 'cloudflare-api-token',
  confidence: 'medium',
  keywords: CLOUDFLARE_CONTEXT,
  token: /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{40}(?![A-Za-z0-9_-])/g,
  reach: 80,
  maxToken: 40,
  check: (token) => mixedClasses(token, true),
})

/**
 * The provider-key detectors, most specific first.
 *
 * @example
 * findSecrets(text, providerKeyDetectors())
 */
export function providerKeyDetectors(): SecretDetector[] {
  return [
    anthropic,
    openAi,
    github,
    githubPat,
    stripe,
    slack,
    google,
    awsKeyId,
    awsSecret,
    cloudflare,
  ]
}
