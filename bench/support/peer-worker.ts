/**
 * @module The guard Worker (`src/worker`, unchanged) as the peer bench runs it in workerd: same routes,
 * same Hono app, with `env.AI` pointed at the simulator's HTTP endpoint instead of an RPC binding.
 * The wrapped env is built once per isolate, so the Worker's per-isolate guard state persists.
 */
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { type PeerVars, peerEnv } from './peer-env'

const app = createApp()
let env: Env | undefined

export default {
  fetch(request, vars, ctx) {
    env ??= peerEnv(vars)
    return app.fetch(request, env, ctx)
  },
} satisfies ExportedHandler<PeerVars>
