/**
 * @module How the probe writes a count for people: rounded, with thousands separators.
 */

/**
 * A count rounded to a whole number, with en-US thousands separators.
 *
 * @example
 * fmt(1_047_488.4) // '1,047,488'
 */
export const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
