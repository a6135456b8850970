/**
 * @module The guard Worker and the reading proxy in one workerd isolate, for the checks benchmark:
 * each request's `x-bench-variant` header picks the reading proxy or the guard Worker app
 * (`src/worker`, unchanged) over an env of its own — the default settings, or one of the Worker's own
 * switches turned off (`GUARD_SECRETS`, the model profile's `echo`, `GUARD_TEXT_MEMO_BYTES`). In one
 * process the variants share the runtime, its threads and its JIT, so their difference is the code's:
 * the same Worker in two workerd processes measured up to 1 ms apart on this machine.
 */
import { createApp } from '../../src/worker/app'
import type { Env } from '../../src/worker/env'
import { type PeerVars, peerEnv } from './peer-env'
import { MODEL } from './prompts'
import proxy from './proxy-worker'

/** The variants, by header value: what each turns off of the default guard Worker. */
export const CHECK_VARIANTS = {
  guard: {},
  'guard again': {},
  'secrets off': { GUARD_SECRETS: 'off' },
  'echo off': { GUARD_MODELS: JSON.stringify({ [MODEL]: { echo: 'off' } }) },
  'memo off': { GUARD_TEXT_MEMO_BYTES: '0' },
  'secrets and echo off': {
    GUARD_SECRETS: 'off',
    GUARD_MODELS: JSON.stringify({ [MODEL]: { echo: 'off' } }),
  },
} satisfies Record<string, Partial<Env>>

export type CheckVariant = keyof typeof CHECK_VARIANTS | 'reading proxy'

const app = createApp()
/** One env per variant, built once: the guard (and what it learns) lives per env in the isolate. */
const envs = new Map<string, Env>()

export default {
  fetch(request, vars, ctx) {
    const variant = request.headers.get('x-bench-variant') ?? 'guard'
    if (variant === 'reading proxy') return proxy.fetch(request, { ...vars, READ: 'js' })
    const settings = CHECK_VARIANTS[variant as keyof typeof CHECK_VARIANTS]
    if (!settings) return new Response(`unknown variant ${variant}`, { status: 400 })
    let env = envs.get(variant)
    if (!env) {
      env = { ...peerEnv(vars), ...settings }
      envs.set(variant, env)
    }
    return app.fetch(request, env, ctx)
  },
} satisfies ExportedHandler<PeerVars>
