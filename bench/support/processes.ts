/**
 * @module Child processes of the benchmarks: servers started with a ready check and stopped by their
 * own process id only (the peer benchmark's simulator, Portkey, the guard on Node), and one-shot
 * scripts in a fresh Node whose last line of output is their JSON report (cold starts).
 */
import { type ChildProcess, spawn } from 'node:child_process'

/** A started child process. */
export interface Child {
  process: ChildProcess
  /** Everything it printed (stdout and stderr), for error reports. */
  output(): string
  stop(): Promise<void>
}

/**
 * Starts `command args…` and resolves once its output matches `ready` (or rejects after `timeoutMs`).
 *
 * @example
 * const pk = await startChild(process.execPath, [PORTKEY, '--port=8790'], /Ready for connections/)
 */
export async function startChild(
  command: string,
  args: readonly string[],
  ready: RegExp,
  options: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<Child> {
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
  })
  let out = ''
  const decoder = new TextDecoder()
  let onOutput: () => void = () => {}
  const collect = (chunk: Uint8Array) => {
    // Keep the head (start-up) and a bounded tail: a chatty child must not grow the bench's memory.
    out = (out + decoder.decode(chunk, { stream: true })).slice(-64_000)
    onOutput()
  }
  child.stdout.on('data', collect)
  child.stderr?.on('data', collect)
  const stop = async () => {
    if (child.exitCode !== null) return
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000)
    await exited
    clearTimeout(timer)
  }
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${command} ${args.join(' ')} not ready in time:\n${out.slice(-2_000)}`))
    }, options.timeoutMs ?? 30_000)
    onOutput = () => {
      if (ready.test(out)) {
        clearTimeout(timer)
        onOutput = () => {}
        resolve()
      }
    }
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (status) => {
      clearTimeout(timer)
      reject(
        new Error(`${command} exited with ${status} before it was ready:\n${out.slice(-2_000)}`),
      )
    })
  })
  return { process: child, output: () => out, stop }
}

/**
 * Runs `script args…` in a new process of this Node with tsx (a fresh isolate: nothing loaded, nothing
 * optimised) and resolves to its last stdout line parsed as JSON, and the wall time it took.
 *
 * @example
 * const { report } = await runScript<{ ms: number }>(join(BENCH_DIR, 'fresh-prompt.ts'), [stage, file])
 */
export function runScript<T>(
  script: string,
  args: readonly string[],
): Promise<{ report: T; wallMs: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: process.cwd(),
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    const decoder = new TextDecoder()
    child.stdout.on('data', (chunk: Uint8Array) => {
      out += decoder.decode(chunk, { stream: true })
    })
    child.on('error', reject)
    child.on('close', (status) => {
      const wallMs = performance.now() - start
      if (status !== 0)
        return reject(new Error(`${script} ${args.join(' ')} exited with ${status}`))
      resolve({ report: JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as T, wallMs })
    })
  })
}
