/**
 * @module More of Node 22's API, typed for the bench's servers and child processes (the project has no
 * @types/node; `bench/node-shim.d.ts` has the rest, and these declarations merge with it).
 */
declare module 'node:http' {
  export interface IncomingMessage extends AsyncIterable<Uint8Array> {
    method?: string
    url?: string
    headers: Record<string, string | string[] | undefined>
  }
  export interface ServerResponse {
    writeHead(status: number, headers: Record<string, string>): this
    write(chunk: Uint8Array): boolean
    end(chunk?: Uint8Array | string): void
    once(event: 'drain' | 'close', listener: () => void): this
    destroyed: boolean
  }
  export interface Server {
    listen(port: number, host: string, callback: () => void): this
    address(): { port: number; address: string } | string | null
    close(callback?: (error?: Error) => void): this
    closeAllConnections(): void
    keepAliveTimeout: number
  }
  export function createServer(
    listener: (request: IncomingMessage, response: ServerResponse) => void,
  ): Server
}

declare module 'node:child_process' {
  interface Readable {
    on(event: 'data', listener: (chunk: Uint8Array) => void): this
  }
  export interface ChildProcess {
    pid?: number
    stderr: Readable | null
    kill(signal?: string): boolean
    exitCode: number | null
  }
  export function spawn(
    command: string,
    args: readonly string[],
    options: {
      cwd?: string
      stdio?: Array<'ignore' | 'pipe' | 'inherit'>
      env?: Record<string, string | undefined>
      /** Its own process group, so that wrangler and the workerd it starts stop together. */
      detached?: boolean
    },
  ): ChildProcess
}
