import { describe, expect, it } from 'vitest'
import type { VerdictLog } from '../../src/core/vocabulary/options'
import {
  type Alert,
  alertFromVerdict,
  operatorDocument,
  renderAlert,
  type SlackMessage,
  slackMessage,
  slackPlain,
  tenantDocument,
} from '../../src/worker/alerts'

const AT = Date.UTC(2026, 10, 30, 23, 0, 0)

const quarantine: VerdictLog = {
  requestId: 'req_1',
  tenant: 'tenant-b',
  model: '@cf/zai-org/glm-5.3',
  action: 'quarantine',
  reasons: ['foreign_canary', 'ttft_impossible'],
  incidentId: 'inc_42',
  sourceTenants: ['tenant-a'],
  estimatedTokens: 12_000,
  ttftMs: 3,
  expectedMinMs: 24,
}

/** Every string a Slack client renders (text objects and the fallback), with its type. */
function slackTexts(message: SlackMessage): { type: string; text: string }[] {
  const out: { type: string; text: string }[] = [{ type: 'fallback', text: message.text }]
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk)
    else if (value && typeof value === 'object') {
      const o = value as Record<string, unknown>
      if ((o.type === 'plain_text' || o.type === 'mrkdwn') && typeof o.text === 'string') {
        out.push({ type: o.type, text: o.text })
      } else Object.values(o).forEach(walk)
    }
  }
  walk(message.blocks)
  return out
}

describe('alert payloads', () => {
  it('should take an alert from a quarantine line only, dropping the receiver from its sources', () => {
    expect(alertFromVerdict({ ...quarantine, action: 'release' }, AT)).toBeUndefined()
    const { incidentId: _, ...noId } = quarantine
    expect(alertFromVerdict(noId, AT)).toBeUndefined()
    const alert = alertFromVerdict(
      { ...quarantine, sourceTenants: ['tenant-a', 'tenant-b', 'tenant-a'] },
      AT,
    )
    expect(alert).toEqual({
      incidentId: 'inc_42',
      reasons: ['foreign_canary', 'ttft_impossible'],
      tenant: 'tenant-b',
      sourceTenants: ['tenant-a'],
      model: '@cf/zai-org/glm-5.3',
      figures: { estimatedTokens: 12_000, ttftMs: 3, expectedMinMs: 24 },
      at: AT,
    })
  })

  it('should write the operator document as version 1 with a console link', () => {
    const alert = alertFromVerdict(quarantine, AT)!
    const doc = operatorDocument(alert, {
      consoleBase: 'https://guard.example.com/',
      suppressed: 2,
    })
    expect(doc).toEqual({
      version: 1,
      type: 'ai_guard.incident',
      incidentId: 'inc_42',
      reasons: ['foreign_canary', 'ttft_impossible'],
      tenant: 'tenant-b',
      sourceTenants: ['tenant-a'],
      model: '@cf/zai-org/glm-5.3',
      figures: { estimatedTokens: 12_000, ttftMs: 3, expectedMinMs: 24 },
      at: '2026-11-30T23:00:00.000Z',
      consoleUrl: 'https://guard.example.com/admin/incidents/inc_42',
      suppressed: 2,
    })
    expect(operatorDocument(alert, { suppressed: 0 })).not.toHaveProperty('consoleUrl')
    expect(JSON.parse(renderAlert(doc, 'json'))).toEqual(doc)
  })

  it('should tell a source tenant only what concerns it: not the receiver, figures or console', () => {
    const alert: Alert = {
      ...alertFromVerdict(quarantine, AT)!,
      sourceTenants: ['tenant-a', 'tenant-c'],
    }
    const doc = tenantDocument(alert, 'tenant-a', { suppressed: 0 })
    expect(doc).toEqual({
      version: 1,
      type: 'ai_guard.tenant_data_withheld',
      incidentId: 'inc_42',
      reasons: ['foreign_canary'],
      tenant: 'tenant-a',
      model: '@cf/zai-org/glm-5.3',
      at: '2026-11-30T23:00:00.000Z',
      withheld: true,
      suppressed: 0,
    })
    for (const format of ['json', 'slack'] as const) {
      const body = renderAlert(doc, format)
      expect(body).not.toContain('tenant-b')
      expect(body).not.toContain('tenant-c')
      expect(body).not.toContain('12000')
      expect(body).not.toContain('admin/incidents')
    }
  })

  it('should render a Slack message with a fallback text, fields and the console link', () => {
    const alert = alertFromVerdict(quarantine, AT)!
    const message = slackMessage(
      operatorDocument(alert, { consoleBase: 'https://guard.example.com', suppressed: 3 }),
    )
    expect(message.text).toBe(
      'AI guard withheld a leaked answer: incident inc_42 (foreign_canary, ttft_impossible) (and 3 more)',
    )
    expect(message.unfurl_links).toBe(false)
    const texts = slackTexts(message)
    expect(texts.filter((t) => t.type === 'mrkdwn')).toEqual([
      {
        type: 'mrkdwn',
        text: '<https://guard.example.com/admin/incidents/inc_42|Open in the console>',
      },
    ])
    const shown = texts.map((t) => t.text).join('\n')
    for (const part of [
      'Answer meant for: tenant-b',
      'Data of: tenant-a',
      'Prompt: 12000 tokens',
      'First token: 3 ms (physical minimum 24 ms)',
      '…and 3 more not alerted since the previous alert',
    ]) {
      expect(shown).toContain(part)
    }
  })

  it('should keep hostile tenant and model names from formatting, linking, mentioning or breaking lines', () => {
    const hostile =
      'evil <!channel> <https://phish.example|click> *bold* _i_ `code`\n> quote\u202eRTL\u200b&amp;'
    const alert: Alert = {
      ...alertFromVerdict(quarantine, AT)!,
      tenant: hostile,
      sourceTenants: [hostile],
      model: `${hostile}"},{"type":"mrkdwn","text":"<!here>`,
      incidentId: 'inc_<!here>|x>',
    }
    for (const doc of [
      operatorDocument(alert, { consoleBase: 'https://g.example', suppressed: 0 }),
      tenantDocument(alert, hostile, { suppressed: 0 }),
    ]) {
      // JSON: the names are data; the document parses back to exactly what was rendered.
      expect(JSON.parse(renderAlert(doc, 'json'))).toEqual(doc)
      const message = JSON.parse(renderAlert(doc, 'slack')) as SlackMessage
      for (const { type, text } of slackTexts(message)) {
        if (type !== 'mrkdwn') expect(text).not.toMatch(/[<>\n\r\u2028\u2029\u202e\u200b]/)
        else {
          // The one mrkdwn text is the console link, whose id cannot close it early.
          expect(text).toBe(
            '<https://g.example/admin/incidents/inc_%3C!here%3E%7Cx%3E|Open in the console>',
          )
        }
      }
      // Every hostile value sits in plain_text (or in the fallback, escaped).
      const mrkdwn = slackTexts(message).filter((t) => t.type === 'mrkdwn')
      for (const { text } of mrkdwn) expect(text).not.toContain('evil')
    }
  })

  it('should make a name inert for Slack: escaped, on one line, and short', () => {
    expect(slackPlain('a <!channel> & b')).toBe('a &lt;!channel&gt; &amp; b')
    expect(slackPlain('line1\nline2\r\n\tline3\u2028x')).toBe('line1 line2 line3 x')
    expect(slackPlain('ab\u202ecd\u200bef')).toBe('ab cd ef')
    const long = slackPlain('x'.repeat(500))
    expect([...long].length).toBe(80)
    expect(long.endsWith('…')).toBe(true)
  })

  it('should cut an enormous model name in the JSON document', () => {
    const alert = { ...alertFromVerdict(quarantine, AT)!, model: 'm'.repeat(100_000) }
    const doc = operatorDocument(alert, { suppressed: 0 })
    expect([...doc.model].length).toBe(200)
    expect(renderAlert(doc, 'json').length).toBeLessThan(2_000)
  })
})
