import { expect } from 'vitest'
import { createGuard, type GuardOptions } from '../../src'
import { chat, directiveCanary } from './prompts'
import { scripted } from './secrets'

/**
 * A guard shared by two tenants (one isolate's fingerprint table) where `tenant-a` has already sent
 * `text` as its prompt and had it answered: another tenant's answer that quotes it is a leak.
 *
 * @example
 * const guard = await withTenantA({ secret, models }, privateText)
 */
export async function withTenantA(options: GuardOptions, text: string) {
  const guard = createGuard(options)
  const answerA = scripted((inputs) => ({
    message: { content: `${directiveCanary(inputs)}\nNoted.` },
  }))
  const a = guard.wrap(answerA, { tenant: 'tenant-a' })
  const sent = (await a.run('@cf/zai-org/glm-5.3', chat(text))) as {
    choices: { message: { content: string } }[]
  }
  expect(sent.choices[0]!.message.content).toBe('Noted.')
  return guard
}
