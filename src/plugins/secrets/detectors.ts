/**
 * @module The built-in detector list, most specific first (the order breaks ties between overlapping
 * spans of equal confidence and length).
 */
import type { SecretDetector } from './detector'
import { identifierDetectors } from './identifiers'
import { providerKeyDetectors } from './provider-keys'
import { structuredDetectors } from './structured'

/**
 * Every built-in detector: structured secrets (PEM, JWT, URL passwords), provider keys,
 * identifiers.
 *
 * @example
 * const spans = findSecrets(prompt, builtInDetectors())
 */
export function builtInDetectors(): SecretDetector[] {
  return [...structuredDetectors(), ...providerKeyDetectors(), ...identifierDetectors()]
}
