/**
 * @module Rotating QUARANTINE_KEY: records name the key they are sealed under, the Worker reads them
 * under QUARANTINE_KEY_PREVIOUS after a rotation, and a key id an attacker writes into a row buys no
 * plaintext.
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
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
async function incidentThroughWorker(
  id: string,
  keys: Partial<Env>,
  accept = 'application/json',
): Promise<Response> {
  const bindings = { ...(env as unknown as Env), ...keys }
  const request = new Request(`http://guard.test/admin/incidents/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}`, accept },
  })
  const ctx = createExecutionContext()
  const res = await worker.fetch(request as Parameters<typeof worker.fetch>[0], bindings, ctx)
  await waitOnExecutionContext(ctx)
  return res
}

/** Rewrites a stored row's key id, as someone with write access to the database could. */
async function forgeKeyId(id: string, keyId: string | null): Promise<void> {
  await db.prepare('UPDATE incidents SET key_id = ? WHERE id = ?').bind(keyId, id).run()
}

const ROTATED = { QUARANTINE_KEY: NEW, QUARANTINE_KEY_PREVIOUS: OLD }
const FOREIGN_ID = '0123456789abcdef'

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
    await forgeKeyId('inc_rotation_forged', oldId!)
    await expect(store.get('inc_rotation_forged')).rejects.toMatchObject({
      name: 'UnreadableIncidentError',
      reason: 'not_authentic',
      keyId: oldId,
    })
    // A key id no keyring holds is refused by name, not tried against every key.
    await forgeKeyId('inc_rotation_forged', FOREIGN_ID)
    await expect(store.get('inc_rotation_forged')).rejects.toThrow(/0123456789abcdef/)
    // The list still works.
    expect((await store.list({ tenant: 'tenant-rotation' })).length).toBeGreaterThan(0)
  })

  it('should never open a record under a key other than the one it names, though that key would', async () => {
    // Sealed under OLD, which the rotated keyring holds: only the id decides which key is tried.
    const previous = new D1QuarantineStore(db, { key: OLD })
    await previous.put(record('inc_rotation_renamed'))
    const rotated = new D1QuarantineStore(db, { key: NEW, previousKeys: [OLD] })
    await rotated.put(record('inc_rotation_new_key'))
    const currentId = (await rotated.get('inc_rotation_new_key'))?.keyId
    expect(currentId).toMatch(/^[0-9a-f]{16}$/)

    await forgeKeyId('inc_rotation_renamed', FOREIGN_ID)
    await expect(rotated.get('inc_rotation_renamed')).rejects.toMatchObject({
      reason: 'key_not_held',
      keyId: FOREIGN_ID,
    })
    await forgeKeyId('inc_rotation_renamed', currentId!)
    await expect(rotated.get('inc_rotation_renamed')).rejects.toMatchObject({
      reason: 'not_authentic',
    })
    // A key id of a form the store never writes is tried under no key at all.
    await forgeKeyId('inc_rotation_renamed', `${FOREIGN_ID} `)
    await expect(rotated.get('inc_rotation_renamed')).rejects.toMatchObject({
      reason: 'not_authentic',
    })
    // Put back, the row reads: the refusals above were the id's doing alone.
    await forgeKeyId('inc_rotation_renamed', null)
    expect((await rotated.get('inc_rotation_renamed'))?.withheld.content).toBe(
      'withheld text of inc_rotation_renamed',
    )
  })

  it('should answer 409 naming the missing key and what to do, on the API and the console, never the text', async () => {
    const store = new D1QuarantineStore(db, { key: NEW, previousKeys: [OLD] })
    await store.put(record('inc_rotation_missing'))
    await store.put({ ...record('inc_rotation_neighbour'), tenant: 'tenant-neighbour' })
    await forgeKeyId('inc_rotation_missing', FOREIGN_ID)

    const api = await incidentThroughWorker('inc_rotation_missing', ROTATED)
    expect(api.status).toBe(409)
    expect(api.headers.get('content-type')).toMatch(/^application\/json/)
    const body = (await api.json()) as { error: { code: string; message: string; param: string } }
    expect(body.error.code).toBe('incident_unreadable')
    expect(body.error.param).toBe('id')
    expect(body.error.message).toContain(`sealed under key ${FOREIGN_ID}`)
    expect(body.error.message).toContain('QUARANTINE_KEY_PREVIOUS')
    expect(body.error.message).toContain('Rotating QUARANTINE_KEY')

    const consoleRes = await incidentThroughWorker('inc_rotation_missing', ROTATED, 'text/html')
    expect(consoleRes.status).toBe(409)
    expect(consoleRes.headers.get('content-type')).toMatch(/^text\/html/)
    const page = await consoleRes.text()
    expect(page).toContain('<h1>Incident cannot be opened</h1>')
    expect(page).toContain(`<code>${FOREIGN_ID}</code>`)
    expect(page).toContain('as QUARANTINE_KEY_PREVIOUS')
    expect(page).toContain('Rotating QUARANTINE_KEY')

    // Nothing of this record's text, nor of any other record, on either answer.
    for (const text of [JSON.stringify(body), page]) {
      expect(text).not.toContain('withheld text of')
      expect(text).not.toContain('inc_rotation_neighbour')
      expect(text).not.toContain('tenant-neighbour')
      expect(text).not.toContain('tenant-rotation')
    }
    // The record the key does open still reads, through the same Worker.
    const neighbour = await incidentThroughWorker('inc_rotation_neighbour', ROTATED)
    expect(neighbour.status).toBe(200)
  })

  it('should answer 409 for an altered row and a pre-key-id record no key opens, echoing no forged bytes', async () => {
    const store = new D1QuarantineStore(db, { key: NEW, previousKeys: [OLD] })
    await store.put(record('inc_rotation_altered'))
    const forged = '<script>alert(1)</script>'
    await forgeKeyId('inc_rotation_altered', forged)
    for (const accept of ['application/json', 'text/html']) {
      const res = await incidentThroughWorker('inc_rotation_altered', ROTATED, accept)
      expect([accept, res.status]).toEqual([accept, 409])
      const text = await res.text()
      expect(text).toContain('never writes')
      expect(text).not.toContain('alert(1)')
      expect(text).not.toContain('withheld text of')
    }

    // Sealed before key ids under a key since dropped from the keyring.
    const legacy = new D1QuarantineStore(db, { key: OLD })
    await legacy.put(record('inc_rotation_legacy_dropped'))
    await forgeKeyId('inc_rotation_legacy_dropped', null)
    const res = await incidentThroughWorker('inc_rotation_legacy_dropped', { QUARANTINE_KEY: NEW })
    expect(res.status).toBe(409)
    const message = ((await res.json()) as { error: { message: string } }).error.message
    expect(message).toContain('sealed before key ids')
    expect(message).toContain('QUARANTINE_KEY_PREVIOUS')
    expect(message).not.toContain('withheld text of')
  })

  it('should refuse a short previous key at start-up, as it refuses a short current one', () => {
    expect(() => new D1QuarantineStore(db, { key: NEW, previousKeys: ['short'] })).toThrow(
      /QUARANTINE_KEY_PREVIOUS" must be at least 32 bytes/,
    )
  })
})
