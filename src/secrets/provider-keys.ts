/**
 * @module Detectors of provider API keys by their published formats. Each regex only proposes; the
 * check confirms with what the format offers: GitHub's and npm's CRC-32, OpenAI's `T3BlbkFJ` marker
 * (base64 of "OpenAI", in every key OpenAI issues), AWS's base32 alphabet, a keyword nearby for the
 * formats that are just 40 random characters (Cloudflare API tokens, AWS secret access keys).
 */
import { githubChecksum } from './checksums'
import { keywordDetector, mixedClasses, regexDetector, type SecretDetector } from './detector'

/** OpenAI: `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` keys carry `T3BlbkFJ` in the middle. */
const openAi = regexDetector(
  'openai-key',
  'high',
  /(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{40,220}(?![A-Za-z0-9_-])/g,
  (m) => m[0].includes('T3BlbkFJ'),
)

/** Anthropic: `sk-ant-api03-` (or `admin01-`, `oat01-`) + ~93 base64url characters ending in `AA`. */
const anthropic = regexDetector(
  'anthropic-key',
  'high',
  /(?<![A-Za-z0-9_-])sk-ant-(?:api|admin|oat)\d\d-[A-Za-z0-9_-]{80,120}AA(?![A-Za-z0-9_-])/g,
)

/**
 * GitHub's classic tokens (`ghp_` personal, `gho_` OAuth, `ghu_` user-to-server, `ghs_` server, `ghr_`
 * refresh) and npm's `npm_` tokens: 30 random base62 characters and the base62 CRC-32 of them.
 */
const github = regexDetector(
  'github-token',
  'high',
  /(?<![A-Za-z0-9_])(?:gh[pousr]|npm)_[A-Za-z0-9]{36}(?![A-Za-z0-9_])/g,
  (m) => githubChecksum(m[0].slice(4, 34)) === m[0].slice(34),
)

/** GitHub's fine-grained tokens: `github_pat_` + 22 + `_` + 59 base62 (no published checksum). */
const githubPat = regexDetector(
  'github-token',
  'high',
  /(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}(?![A-Za-z0-9_])/g,
)

/** Stripe secret and restricted keys, live and test (publishable `pk_` keys are public). */
const stripe = regexDetector(
  'stripe-key',
  'high',
  /(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}(?![A-Za-z0-9_])/g,
  (m) => mixedClasses(m[0].slice(8)),
)

/** Slack: `xoxb-` bot, `xoxp-` user, `xoxa-`/`xoxr-` refresh, `xoxs-`, `xoxo-`: numeric ids, then a secret. */
const slack = regexDetector(
  'slack-token',
  'high',
  /(?<![A-Za-z0-9-])xox[abposr]-(?:\d{1,15}-){1,4}[A-Za-z0-9]{16,64}(?![A-Za-z0-9-])/g,
)

/** Google API keys: `AIza` + 35 base64url characters. */
const google = regexDetector(
  'google-api-key',
  'high',
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g,
)

/** AWS access key ids (`AKIA` long-term, `ASIA` temporary): 16 more characters of base32. */
const awsKeyId = regexDetector(
  'aws-access-key-id',
  'high',
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z2-7]{16}(?![A-Za-z0-9])/g,
)

/** `aws` as a word (not inside a random string), `secret access`, or a key id. */
const AWS_SECRET_CONTEXT = /(?<![a-z0-9])aws(?![a-z0-9])|secret.?access|(?:AKIA|ASIA)[A-Z2-7]{16}/gi

/** AWS secret access keys: 40 base64 characters — only next to a key id or an AWS keyword. */
const awsSecret = keywordDetector(
  'aws-secret-access-key',
  'medium',
  AWS_SECRET_CONTEXT,
  /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
  120,
  40,
  (token) => mixedClasses(token, true),
)

const CLOUDFLARE_CONTEXT = /cloudflare|(?<![a-z0-9])cf[_-]|wrangler|api[_ -]?token|bearer/gi

/**
 * Cloudflare API tokens: 40 characters of `[A-Za-z0-9_-]` with no prefix, so the format alone is weak
 * (any 40-character identifier matches): only with a Cloudflare keyword, `api_token` or `Bearer` in
 * the 80 characters before, and mixed character classes (drops hex digests).
 */
const cloudflare = keywordDetector(
  'cloudflare-api-token',
  'medium',
  CLOUDFLARE_CONTEXT,
  /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{40}(?![A-Za-z0-9_-])/g,
  80,
  40,
  (token) => mixedClasses(token, true),
)

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
