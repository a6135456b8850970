import { describe, expect, it } from 'vitest'
import { GuardError } from '../../src/core/errors'
import { importStandInKey } from '../../src/plugins/secrets'
import { resolveSecrets } from '../../src/plugins/secrets/policy'
import { substituteSecrets } from '../../src/plugins/secrets/prompt-secrets'

const SECRET = 'refusal-test-secret-0123456789abcdef0123'
const request = { requestId: 'r1', tenant: 'acme', model: '@cf/x' }

function services(options: Parameters<typeof resolveSecrets>[0]) {
  return { secrets: resolveSecrets(options), standInKey: () => importStandInKey(SECRET) }
}

describe('a secret the guard cannot replace', () => {
  it('should refuse the request, naming the kind, rather than send the secret', async () => {
    const pin = { name: 'door-pin', pattern: 'PIN [0-9]{4}', confidence: 'high' as const }
    const inputs = { messages: [{ role: 'user', content: 'The door code is PIN 4821, keep it.' }] }
    const refused = await substituteSecrets(
      services({ patterns: [pin], kinds: { 'door-pin': 'substitute' } }),
      request,
      inputs,
    ).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(GuardError)
    expect((refused as GuardError).code).toBe('invalid_request')
    expect((refused as GuardError).message).toContain('"door-pin"')
    expect((refused as GuardError).message).not.toContain('4821')
  })

  it('should send it unchanged and count it under detect', async () => {
    const pin = { name: 'door-pin', pattern: 'PIN [0-9]{4}', confidence: 'high' as const }
    const inputs = { messages: [{ role: 'user', content: 'The door code is PIN 4821, keep it.' }] }
    const done = await substituteSecrets(
      services({ patterns: [pin], kinds: { 'door-pin': 'detect' } }),
      request,
      inputs,
    )
    expect(done.inputs).toBe(inputs)
    expect(done.secrets?.detected).toEqual({ 'door-pin': 1 })
  })
})
