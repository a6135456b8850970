/** @module docs/probe.md, "In code and in tests": the probe against the simulator, on a virtual clock. */
// #region probe-sim
import { VirtualClock } from './sim/clock'
import { SimEngine } from './sim/engine'
import { runnerTransport, runProbe } from './src/tools/probe'

const clock = new VirtualClock()
const engine = new SimEngine({ mode: 'pd-abort-leak', decodeTokensPerSecond: Infinity }, { clock })
const report = await runProbe({
  transport: runnerTransport(engine.binding('probe'), { model, now: () => clock.now() }),
  window: 1_048_576,
})
report.leak // true; report.largestOk, report.profile, report.exitCode …
// #endregion
