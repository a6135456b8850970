/**
 * @module The token ceiling: what the model reads, how many tokens that is, and whether it fits.
 */
export * from './calibration'
export * from './ceiling'
export * from './count'
export * from './estimate'
export * from './prompt'
export * from './script'
export * from './utf8'
