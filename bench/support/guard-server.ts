/**
 * @module Child process: the same guard Worker app on Node 22, served over loopback HTTP — the peer
 * bench's like-for-like runtime next to Portkey (also Node). Prints `{"port":N}` when ready.
 * Settings come from the environment: SIM_URL, GUARD_SECRET, TENANT_KEYS.
 */
import { createApp } from '../../src/worker/app'
import { serve } from './http'
import { peerEnv } from './peer-env'

const vars: Record<string, string | undefined> = process.env
const env = peerEnv({
  SIM_URL: vars.SIM_URL ?? '',
  GUARD_SECRET: vars.GUARD_SECRET ?? '',
  TENANT_KEYS: vars.TENANT_KEYS ?? '{}',
})
const app = createApp()
const ctx = {
  waitUntil: (promise: Promise<unknown>) => void promise.catch(() => {}),
  passThroughOnException: () => {},
  props: {},
}
const served = await serve((request) => app.fetch(request, env, ctx))
console.log(JSON.stringify({ port: served.port }))
