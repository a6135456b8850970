/**
 * @module The few Node 22 APIs the benchmarks use, typed here because the project has no @types/node
 * (its runtime code is Web-standard only). Delete this file if @types/node is ever added.
 */
declare module 'node:fs/promises' {
  export function readFile(path: string | URL, encoding: 'utf8'): Promise<string>
  export function writeFile(path: string, data: string | Uint8Array): Promise<void>
  export function mkdtemp(prefix: string): Promise<string>
  export function rm(
    path: string,
    options?: { recursive?: boolean; force?: boolean },
  ): Promise<void>
  export function mkdir(path: string, options?: { recursive?: boolean }): Promise<unknown>
  export function readdir(path: string, options?: { recursive?: boolean }): Promise<string[]>
  export function stat(path: string): Promise<{ isFile(): boolean }>
}

declare module 'node:os' {
  export function cpus(): Array<{ model: string; speed: number }>
  export function tmpdir(): string
}

declare module 'node:zlib' {
  export function gzipSync(data: string | Uint8Array): Uint8Array
  export function gunzipSync(data: Uint8Array): Uint8Array
}

declare module 'node:path' {
  export function join(...parts: string[]): string
}

declare module 'node:url' {
  export function pathToFileURL(path: string): URL
}

declare module 'node:child_process' {
  interface Readable {
    on(event: 'data', listener: (chunk: Uint8Array) => void): this
  }
  export interface ChildProcess {
    stdout: Readable
    on(event: 'error', listener: (error: Error) => void): this
    on(event: 'close', listener: (status: number | null) => void): this
  }
  export function spawn(
    command: string,
    args: readonly string[],
    options: { cwd?: string; stdio?: Array<'ignore' | 'pipe' | 'inherit'> },
  ): ChildProcess
}
