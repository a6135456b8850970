/**
 * @module Rotating QUARANTINE_KEY: records name the key they are sealed under, the Worker reads them
 * under QUARANTINE_KEY_PREVIOUS after a rotation, and a key id an attacker writes into a row buys no
 * plaintext.
 */
import { createExecutionContext, env, SELF, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { D1QuarantineStore } from '../../src/core/quarantine/d1'
import type { QuarantineRecord } from '../../src/core/vocabulary/quarantine'
import type { Env } from '../../src/worker/env'
import worker from '../../src/worker/index'
import { ADMIN } from '../support/worker'

const db = (env as unknown as { QUARANTINE_DB: D1Database }).QUARANTINE_DB
const OLD = 'quarantine-key-before-rotation-0123456789abcdef'
const NEW = 'quarantine-key-after-rotation-0123456789abcdefgh'

function record(id: string): QuarantineRecord {
  return {
    id,
    at: Date.now(),
    tenant: 'tenant-rotation',
    model: '@cf/zai-org/glm-5.3',
    requestId: `req-${id}`,
    reasons: ['echo_missing'],
    figures: {},
    canaries: [],
    sourceTenants: [],
    withheld: { content: `withheld text of ${id}` },
  }
}

/** The Worker as deployed with these quarantine secrets (its own bindings: its own guard). */
async function incidentThroughWorker(id: string, keys: Partial<Env>): Promise<Response> {
  const bindings = { ...(env as unknown as Env), ...keys }
  const request = new Request(`http://guard.test/admin/incidents/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  })
  const ctx = createExecutionContext()
  const res = await worker.fetch(request as Parameters<typeof worker.fetch>[0], bindings, ctx)
  await waitOnExecutionContext(ctx)
  return res
}

describe('quarantine key rotation', () => {
  it('should read an incident sealed before a rotation after it, through the Worker', async () => {
    const before = new D1QuarantineStore(db, { key: OLD })
    await before.put(record('inc_rotation_old'))
    const sealedUnder = (await before.get('inc_rotation_old'))?.keyId
    expect(sealedUnder).toMatch(/^[0-9a-f]{16}$/)

    // Rotated: the new key current, the old one previous.
    const rotated = { QUARANTINE_KEY: NEW, QUARANTINE_KEY_PREVIOUS: OLD }
    const res = await incidentThroughWorker('inc_rotation_old', rotated)
    expect(res.status).toBe(200)
    const read = (await res.json()) as QuarantineRecord
    expect(read.withheld.content).toBe('withheld text of inc_rotation_old')
    expect(read.keyId).toBe(sealedUnder)

    // New records are sealed under the new key, and name it.
    const after = new D1QuarantineStore(db, { key: NEW, previousKeys: [OLD] })
    await after.put(record('inc_rotation_new'))
    const fresh = await after.get('inc_rotation_new')
    expect(fresh?.withheld.content).toBe('withheld text of inc_rotation_new')
    expect(fresh?.keyId).toMatch(/^[0-9a-f]{16}$/)
    expect(fresh?.keyId).not.toBe(sealedUnder)
    // Once the old key is dropped from the keyring its records fail by name; new ones still read.
    const dropped = new D1QuarantineStore(db, { key: NEW })
    await expect(dropped.get('inc_rotation_old')).rejects.toThrow(
      /sealed under key [0-9a-f]{16}, which is neither QUARANTINE_KEY nor QUARANTINE_KEY_PREVIOUS/,
    )
    expect((await dropped.get('inc_rotation_new'))?.withheld.content).toContain('inc_rotation_new')
  })

  it('should read records sealed before key ids under any key of the keyring', async () => {
    const legacy = new D1QuarantineStore(db, { key: OLD })
    await legacy.put(record('inc_rotation_legacy'))
    // As a row written before migrations/0007: no key id.
    await db
      .prepare('UPDATE incidents SET key_id = NULL WHERE id = ?')
      .bind('inc_rotation_legacy')
      .run()
    const rotated = new D1QuarantineStore(db, { key: NEW, previousKeys: [OLD] })
    const read = await rotated.get('inc_rotation_legacy')
    expect(read?.withheld.content).toBe('withheld text of inc_rotation_legacy')
    expect(read).not.toHaveProperty('keyId')
  })

  it('should give no plaintext for a forged key id: another key named, or one it does not hold', async () => {
    const store = new D1QuarantineStore(db, { key: NEW, previousKeys: [OLD] })
    await store.put(record('inc_rotation_forged'))
    const previous = new D1QuarantineStore(db, { key: OLD })
    await previous.put(record('inc_rotation_forged_old'))
    const oldId = (await previous.get('inc_rotation_forged_old'))?.keyId
    expect(oldId).toMatch(/^[0-9a-f]{16}$/)
    // A row rewritten to name the previous key: decryption under it fails (AES-GCM), nothing is read.
    await db
      .prepare('UPDATE incidents SET key_id = ? WHERE id = ?')
      .bind(oldId, 'inc_rotation_forged')
      .run()
    await expect(store.get('inc_rotation_forged')).rejects.toThrow()
    // A key id no keyring holds is refused by name, not tried against every key.
    await db
      .prepare('UPDATE incidents SET key_id = ? WHERE id = ?')
      .bind('0123456789abcdef', 'inc_rotation_forged')
      .run()
    await expect(store.get('inc_rotation_forged')).rejects.toThrow(/0123456789abcdef/)
    // The console answers 500 without the text, and the list still works.
    const res = await SELF.fetch('http://guard.test/admin/incidents/inc_rotation_forged', {
      headers: { authorization: `Bearer ${ADMIN}` },
    })
    expect(res.status).toBe(500)
    expect(await res.text()).not.toContain('withheld text')
    expect((await store.list({ tenant: 'tenant-rotation' })).length).toBeGreaterThan(0)
  })

  it('should refuse a short previous key at start-up, as it refuses a short current one', () => {
    expect(() => new D1QuarantineStore(db, { key: NEW, previousKeys: ['short'] })).toThrow(
      /QUARANTINE_KEY_PREVIOUS" must be at least 32 bytes/,
    )
  })
})
