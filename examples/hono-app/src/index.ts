/**
 * @module The example's Worker entry: the app, with the secret read once from the Worker's env.
 */
import { env } from 'cloudflare:workers'
import { type Bindings, createApp } from './app'

export default createApp((env as unknown as Bindings).GUARD_SECRET)
