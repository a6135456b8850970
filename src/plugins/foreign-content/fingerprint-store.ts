/**
 * @module The shape of a fingerprint store shared across isolates (the Worker's is a Durable Object):
 * isolates publish the fingerprints of the prompts they guard and pull what others published since
 * their last cursor into their own `FingerprintTable`. The shapes are the core's (the Worker's
 * store implements them): re-exported here for the plug-in.
 */

export type { FingerprintBatch, FingerprintStore, StoreGap, StoreRead } from '../../core'
