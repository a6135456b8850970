/**
 * @module The Node adapter of the audit: log files as {@link LogSource}s, streamed with node:fs
 * (through `process.getBuiltinModule`, since the project has no @types/node). The only I/O of the
 * audit; everything else in src/tools/audit is pure.
 */
import type { LogSource } from './findings'
import { linesOf } from './lines'

interface Piped extends AsyncIterable<Uint8Array> {
  pipe(to: Piped): Piped
}

interface NodeFs {
  createReadStream(path: string, options: { highWaterMark: number }): Piped
  promises: { stat(path: string): Promise<{ size: number; isFile(): boolean }> }
}

interface NodeZlib {
  createGunzip(): Piped
}

interface NodeProcessModules {
  getBuiltinModule(name: 'node:fs'): NodeFs
  getBuiltinModule(name: 'node:zlib'): NodeZlib
}

/** Bytes read per chunk: large enough for throughput, small next to any line. */
const CHUNK_BYTES = 1 << 20

/**
 * Opens a log file (gzipped when its name ends in `.gz`): its size now, its lines on each `lines()`
 * call. Rejects when the path is not a readable file.
 *
 * @example
 * const source = await nodeLogSource('logs/gateway-2026-09-01.jsonl')
 */
export async function nodeLogSource(path: string): Promise<LogSource> {
  const modules = process as unknown as NodeProcessModules
  const fs = modules.getBuiltinModule('node:fs')
  const info = await fs.promises.stat(path)
  if (!info.isFile()) throw new Error(`${path} is not a file`)
  return {
    name: path,
    size: info.size,
    lines: () => {
      const bytes = fs.createReadStream(path, { highWaterMark: CHUNK_BYTES })
      // Logpush writes gzipped files: read them as they are.
      return linesOf(
        path.endsWith('.gz')
          ? bytes.pipe(modules.getBuiltinModule('node:zlib').createGunzip())
          : bytes,
      )
    },
  }
}
