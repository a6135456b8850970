/**
 * @module The token ceiling: what the model reads, how many tokens that is, and whether it fits.
 */
export * from './calibration'
export * from './ceiling'
export * from './count'
export * from './prompt'
export * from './utf8'
