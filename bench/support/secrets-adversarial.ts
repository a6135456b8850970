/**
 * @module The secret detectors on 1 MB of input built against each of them (the units of
 * test/secrets/generate.ts), for the secrets suite: the speed the detectors' test used to hold with a
 * wall-clock budget, measured here instead, medians of scans alternated per round.
 */
import { builtInDetectors, operatorDetector } from '../../src/plugins/secrets'
import {
  ADVERSARIAL_UNITS,
  adversarialInput,
  WORST_ALLOWED_OPERATOR,
} from '../../test/secrets/generate'
import { median, ms, sideBySide } from '../lib'

const MB = 1 << 20

/** One detector's scans of every adversarial input. */
export interface AdversarialRow {
  detector: string
  confidence: string
  /** Median ms per scan of 1 MB of each unit repeated. */
  medianMsPerInput: Record<string, number>
  /** The unit it is slowest on, and how its time grows from 256 KB to 1 MB (linear: 4). */
  slowest: { input: string; medianMs1MB: number; medianMs256KB: number; growth: number }
  /** 1 MB over the slowest median: the throughput floor on hostile text. */
  worstMBPerSecond: number
}

/**
 * Every built-in detector and the costliest operator pattern the rule allows, on every input.
 *
 * @example
 * const rows = await adversarialRows(quick ? 3 : 7)
 */
export async function adversarialRows(runs: number): Promise<AdversarialRow[]> {
  const inputs = ADVERSARIAL_UNITS.map((unit) => [unit, adversarialInput(unit, MB)] as const)
  const rows: AdversarialRow[] = []
  for (const detector of [...builtInDetectors(), operatorDetector(WORST_ALLOWED_OPERATOR)]) {
    const contenders = Object.fromEntries(
      inputs.map(([unit, text]) => [unit, () => detector.find(text).length]),
    )
    const samples = await sideBySide(contenders, runs, 1)
    const medianMsPerInput = Object.fromEntries(
      Object.entries(samples).map(([unit, s]) => [unit, round(median(s))]),
    )
    const [input] = Object.entries(medianMsPerInput).sort((a, b) => b[1] - a[1])[0]!
    const whole = adversarialInput(input, MB)
    const quarter = whole.slice(0, MB / 4)
    const growth = await sideBySide(
      { '1 MB': () => detector.find(whole).length, '256 KB': () => detector.find(quarter).length },
      runs,
      1,
    )
    const medianMs1MB = round(median(growth['1 MB']))
    const medianMs256KB = round(median(growth['256 KB']))
    rows.push({
      detector: detector.kind,
      confidence: detector.confidence,
      medianMsPerInput,
      slowest: {
        input,
        medianMs1MB,
        medianMs256KB,
        growth: +(medianMs1MB / medianMs256KB).toFixed(1),
      },
      worstMBPerSecond: +(1000 / medianMsPerInput[input]!).toFixed(1),
    })
    console.log(
      `  adversarial ${detector.kind.padEnd(22)} slowest on ${JSON.stringify(input).padEnd(18)} ` +
        `1 MB ${ms(medianMs1MB)}, 256 KB ${ms(medianMs256KB)}`,
    )
  }
  return rows
}

function round(value: number): number {
  return +value.toFixed(2)
}
