/**
 * @module The rest of Node 22's API the silent-stream bench uses (a server that holds its answer, a
 * client with no timeout of its own, a process group to stop): merged with `bench/support/node.d.ts`.
 */
declare module 'node:http' {
  export interface IncomingMessage {
    statusCode?: number
    resume(): this
    on(event: 'data', listener: (chunk: Uint8Array) => void): this
    on(event: 'end' | 'close' | 'aborted', listener: () => void): this
    on(event: 'error', listener: (error: Error) => void): this
  }
  export interface ServerResponse {
    flushHeaders(): void
    on(event: 'close', listener: () => void): this
  }
  export interface Server {
    /** 0: no limit on receiving a request (Node's default is 300 s). */
    requestTimeout: number
  }
  export interface ClientRequest {
    on(event: 'error', listener: (error: Error) => void): this
    end(body?: string): void
    destroy(error?: Error): void
  }
  export function request(
    url: string,
    options: { method: string; headers: Record<string, string> },
    callback: (response: IncomingMessage) => void,
  ): ClientRequest
}

declare module 'node:child_process' {
  export interface ChildProcess {
    on(event: 'exit', listener: (status: number | null) => void): this
  }
}
