/**
 * @module CPU time of a workerd process that Miniflare started, read from /proc (Linux): what the
 * platform bills a Worker for is its isolate's CPU, and outside the isolate this is the way to see it.
 */
import { readdir, readFile } from 'node:fs/promises'

/** The workerd processes that are children of this Node process. */
export async function workerdChildren(): Promise<number[]> {
  const self: number = process.pid
  const found: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8')
      // "pid (comm) state ppid …": comm may hold spaces, so split after its closing parenthesis.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === self && comm.startsWith('workerd')) found.push(Number(entry))
    } catch {
      // The process ended while being read.
    }
  }
  return found
}

/** The one workerd child started by `start` (the children before and after it compared). */
export async function startedWorkerd<T>(
  start: () => Promise<T>,
): Promise<{ value: T; pid: number }> {
  const before = new Set(await workerdChildren())
  const value = await start()
  const added = (await workerdChildren()).filter((pid) => !before.has(pid))
  if (added.length !== 1) throw new Error(`expected one new workerd child, found ${added.length}`)
  return { value, pid: added[0]! }
}

/** CPU time of every thread of `pid`, in ms (schedstat: nanoseconds on a CPU). */
export async function cpuMs(pid: number): Promise<number> {
  let ns = 0
  for (const task of await readdir(`/proc/${pid}/task`)) {
    try {
      ns += Number((await readFile(`/proc/${pid}/task/${task}/schedstat`, 'utf8')).split(' ')[0])
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns / 1e6
}
