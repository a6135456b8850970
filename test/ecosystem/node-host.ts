/**
 * @module The few Node APIs the Node-only ecosystem tests use (processes, files, ports), typed here.
 *
 * The project type-checks against the Workers runtime types only (no @types/node, whose globals would
 * clash with workerd's), so Node built-ins are loaded by a computed specifier and given the narrow
 * shapes below. Only Node tests import this; workerd never loads it.
 */

/** A readable stream of a child process, as far as these tests read it. */
export interface OutputLike {
  on(event: 'data', listener: (chunk: { toString(): string }) => void): void
}

/** A spawned process, as far as these tests drive it. */
export interface ChildLike {
  readonly pid?: number
  readonly exitCode: number | null
  readonly stdout: OutputLike | null
  readonly stderr: OutputLike | null
  once(event: 'exit', listener: (code: number | null) => void): void
  once(event: 'error', listener: (error: Error) => void): void
}

/** What the Node tests need of the host. */
export interface NodeHost {
  spawn(
    command: string,
    args: string[],
    options: { cwd: string; env?: Record<string, string | undefined>; detached?: boolean },
  ): ChildLike
  /** Runs to completion: its exit code, standard output and error apart, and both as they came. */
  capture(
    command: string,
    args: string[],
    options: { cwd: string; env?: Record<string, string | undefined> },
  ): Promise<{ code: number | null; out: string; err: string; both: string }>
  /** Runs to completion; rejects with the output when the exit code is not 0. */
  run(
    command: string,
    args: string[],
    options: { cwd: string; env?: Record<string, string | undefined> },
  ): Promise<string>
  tempDir(prefix: string): string
  copy(from: string, to: string): void
  link(target: string, path: string): void
  remove(path: string): void
  write(path: string, text: string): void
  read(path: string): string
  exists(path: string): boolean
  join(...parts: string[]): string
  /** A TCP port free on loopback right now. */
  freePort(): Promise<number>
  /** Ends a detached child and everything it started (its process group), by id. */
  stop(child: ChildLike): Promise<void>
  env: Record<string, string | undefined>
  /** The working directory: the repository root under vitest. */
  cwd: string
}

// A computed specifier keeps the type checker from looking for Node's declarations.
const load = (name: string): Promise<unknown> => import(/* @vite-ignore */ `node:${name}`)

interface Fs {
  mkdtempSync(prefix: string): string
  cpSync(from: string, to: string, options: { recursive: boolean }): void
  symlinkSync(target: string, path: string, type: string): void
  rmSync(path: string, options: { recursive: boolean; force: boolean }): void
  writeFileSync(path: string, text: string): void
  readFileSync(path: string, encoding: 'utf8'): string
  existsSync(path: string): boolean
}
interface ServerLike {
  once(event: 'error', listener: (error: Error) => void): void
  listen(port: number, host: string, listener: () => void): void
  address(): { port: number } | string | null
  close(listener: () => void): void
}
interface ProcessLike {
  env: Record<string, string | undefined>
  cwd(): string
  kill(pid: number, signal: string): void
}

/**
 * The host's Node APIs, loaded once.
 *
 * @example
 * const host = await nodeHost()
 * const dir = host.tempDir('guard-')
 */
export async function nodeHost(): Promise<NodeHost> {
  const [cp, fs, net, os, path] = (await Promise.all(
    ['child_process', 'fs', 'net', 'os', 'path'].map(load),
  )) as [
    {
      spawn: (c: string, a: string[], o: Record<string, unknown>) => ChildLike
    },
    Fs,
    { createServer(): ServerLike },
    { tmpdir(): string },
    { join(...parts: string[]): string },
  ]
  const proc = (globalThis as unknown as { process: ProcessLike }).process
  const spawn: NodeHost['spawn'] = (command, args, options) =>
    cp.spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  const capture: NodeHost['capture'] = (command, args, options) =>
    new Promise((done, fail) => {
      const child = spawn(command, args, options)
      let out = ''
      let err = ''
      let both = ''
      child.stdout?.on('data', (d) => {
        out += d.toString()
        both += d.toString()
      })
      child.stderr?.on('data', (d) => {
        err += d.toString()
        both += d.toString()
      })
      child.once('error', fail)
      child.once('exit', (code) => done({ code, out, err, both }))
    })
  return {
    spawn,
    capture,
    run: async (command, args, options) => {
      const { code, both } = await capture(command, args, options)
      if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}:\n${both}`)
      return both
    },
    tempDir: (prefix) => fs.mkdtempSync(path.join(os.tmpdir(), prefix)),
    copy: (from, to) => fs.cpSync(from, to, { recursive: true }),
    link: (target, at) => fs.symlinkSync(target, at, 'dir'),
    remove: (at) => fs.rmSync(at, { recursive: true, force: true }),
    write: (at, text) => fs.writeFileSync(at, text),
    read: (at) => fs.readFileSync(at, 'utf8'),
    exists: (at) => fs.existsSync(at),
    join: (...parts) => path.join(...parts),
    freePort: () =>
      new Promise((done, fail) => {
        const server = net.createServer()
        server.once('error', fail)
        server.listen(0, '127.0.0.1', () => {
          const address = server.address()
          server.close(() => done(typeof address === 'object' && address ? address.port : 0))
        })
      }),
    stop: async (child) => {
      if (child.pid === undefined || child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      proc.kill(-child.pid, 'SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))])
      if (child.exitCode === null) proc.kill(-child.pid, 'SIGKILL')
    },
    env: proc.env,
    cwd: proc.cwd(),
  }
}
