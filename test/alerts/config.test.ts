import { describe, expect, it } from 'vitest'
import { parseAlertConfig } from '../../src/worker/alerts'

const SECRET = 'test-alert-secret-0123456789-abcdefghij'

describe('parseAlertConfig', () => {
  it('should configure nothing, silently, when nothing is set', () => {
    const { config, errors } = parseAlertConfig({})
    expect(errors).toEqual([])
    expect(config.operator).toBeUndefined()
    expect(config.tenants.size).toBe(0)
    expect(config.reasons).toEqual(
      new Set(['foreign_canary', 'foreign_stand_in', 'foreign_content']),
    )
  })

  it('should configure the operator webhook, format and console base', () => {
    const { config, errors } = parseAlertConfig({
      webhookUrl: 'https://hooks.slack.com/services/T0/B0/secretpath',
      webhookSecret: SECRET,
      webhookFormat: 'slack',
      consoleUrl: 'https://guard.example.com/',
      reasons: 'all',
    })
    expect(errors).toEqual([])
    expect(config.operator).toMatchObject({
      key: 'operator',
      host: 'hooks.slack.com',
      format: 'slack',
      derived: false,
    })
    expect(config.consoleBase).toBe('https://guard.example.com')
    expect(config.reasons).toBe('all')
  })

  it('should never send unsigned: a missing or short secret turns the operator webhook off', () => {
    for (const webhookSecret of [undefined, '', 'short', 'x'.repeat(31)]) {
      const { config, errors } = parseAlertConfig({
        webhookUrl: 'https://h.example/x',
        webhookSecret,
      })
      expect(config.operator).toBeUndefined()
      expect(errors.join('; ')).toContain('operator alerts are off')
    }
  })

  it('should refuse plain http except to loopback, other schemes and credentials, naming the variable only', () => {
    const bad = [
      'http://hooks.example.com/x',
      'ftp://h.example/x',
      'javascript:alert(1)',
      'not a url',
      'https://user:pass@h.example/x',
      'http://127.0.0.2.nip.io/x',
    ]
    for (const webhookUrl of bad) {
      const { config, errors } = parseAlertConfig({ webhookUrl, webhookSecret: SECRET })
      expect(config.operator, webhookUrl).toBeUndefined()
      expect(errors[0]).toMatch(/^ALERT_WEBHOOK_URL /)
      // The URL is never echoed: a webhook URL's path can be its secret.
      expect(errors.join(' ')).not.toContain(webhookUrl)
    }
    for (const webhookUrl of [
      'http://127.0.0.1:9999/hook',
      'http://localhost/x',
      'http://[::1]:1/x',
    ]) {
      expect(parseAlertConfig({ webhookUrl, webhookSecret: SECRET }).config.operator).toBeDefined()
    }
  })

  it('should turn off only what a bad setting concerns', () => {
    const { config, errors } = parseAlertConfig({
      webhookUrl: 'https://h.example/x',
      webhookSecret: SECRET,
      webhookFormat: 'xml',
      tenantWebhooks: JSON.stringify({
        'tenant-a': { url: 'https://a.example/hook' },
        'tenant-b': { url: 'https://b.example/hook', secret: 'short' },
        'tenant-c': { url: 'http://c.example/hook' },
        'tenant-d': 'https://d.example',
        'tenant-e': { url: 'https://e.example/hook', secret: `${SECRET}-e`, format: 'slack' },
      }),
      consoleUrl: 'ftp://x',
      reasons: 'foreign_canary; DROP TABLE',
    })
    expect(config.operator).toBeUndefined()
    expect([...config.tenants.keys()]).toEqual(['tenant-a', 'tenant-e'])
    expect(config.tenants.get('tenant-a')).toMatchObject({ derived: true, format: 'json' })
    expect(config.tenants.get('tenant-e')).toMatchObject({ derived: false, format: 'slack' })
    expect(config.consoleBase).toBeUndefined()
    expect(config.reasons).toEqual(
      new Set(['foreign_canary', 'foreign_stand_in', 'foreign_content']),
    )
    expect(errors).toEqual([
      'ALERT_WEBHOOK_FORMAT must be "slack" or "json"',
      'TENANT_WEBHOOKS["tenant-b"].secret must be at least 32 bytes',
      'TENANT_WEBHOOKS["tenant-c"].url must be https:// (plain http only to localhost or 127.0.0.1)',
      'TENANT_WEBHOOKS["tenant-d"] must be an object { url, secret?, format? }',
      'ALERT_REASONS must be "all" or reasons like foreign_canary,foreign_content',
      'CONSOLE_URL must be an http(s) URL; alerts carry no console link',
    ])
  })

  it('should survive TENANT_WEBHOOKS that is not JSON, or not an object', () => {
    for (const tenantWebhooks of ['{', '[]', 'null', '"x"']) {
      const { config, errors } = parseAlertConfig({ tenantWebhooks, webhookSecret: SECRET })
      expect(config.tenants.size).toBe(0)
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatch(/^TENANT_WEBHOOKS /)
    }
  })

  it('should not derive tenant secrets from an unusable operator secret', () => {
    const { config, errors } = parseAlertConfig({
      tenantWebhooks: JSON.stringify({ 'tenant-a': { url: 'https://a.example/hook' } }),
    })
    expect(config.tenants.size).toBe(0)
    expect(errors).toEqual([
      'TENANT_WEBHOOKS["tenant-a"] has no secret and ALERT_WEBHOOK_SECRET is not usable to derive one',
    ])
  })
})
