/**
 * @module Child processes for the peer benchmark (simulator, Portkey, the guard on Node): started with
 * a ready check, stopped by their own process id only.
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
