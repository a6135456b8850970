/** @module Temporary: the verdict table moved to src/verify/verdict.ts (removed with the test moves). */
export * from './verify/verdict'
