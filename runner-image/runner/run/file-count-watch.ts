/**
 * Watches the folders of a command's multi-file outputs while ffmpeg runs and
 * aborts when they hold more files than the command may write, so a pattern
 * that would write 100,000 files is stopped after about `max`, not after
 * filling the disk. Started only for commands with a folder output: a
 * single-file command pays nothing.
 *
 * inotify (fs.watch) says when names appear; each event only counts up, and a
 * real count of the folders (readdir) is made once the events pass `max`, at
 * most every RECOUNT_MS, since events overcount (temp files renamed, segments
 * deleted). Only name events count ('rename': a name appeared or went): a
 * file's writes ('change') add no file, and an HLS ladder's ~1,000 of them
 * pushed the count past `max` and so made a readdir every RECOUNT_MS beside
 * the encode. A slow timer recounts too, in case the kernel's queue overflowed
 * and events were lost. The collection after ffmpeg counts again regardless.
 */
import { watch, type FSWatcher } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'

const RECOUNT_MS = 50
const FALLBACK_RECOUNT_MS = 1000

export interface FileCountWatch {
  /** Aborted when the folders hold more than `max` files. */
  signal: AbortSignal
  stop(): void
}

export function watchFileCount(workDir: string, folders: readonly string[], max: number): FileCountWatch {
  const controller = new AbortController()
  const paths = folders.map((folder) => join(workDir, folder))
  let events = 0
  let counting = false
  let lastCount = 0
  const recount = async (): Promise<void> => {
    if (counting || controller.signal.aborted) return
    counting = true
    lastCount = Date.now()
    try {
      let total = 0
      for (const path of paths) total += (await readdir(path).catch(() => [])).length
      if (total > max) controller.abort()
      else events = total
    } finally {
      counting = false
    }
  }
  const onEvent = (kind: string) => {
    if (kind !== 'rename') return
    events++
    if (events > max && Date.now() - lastCount >= RECOUNT_MS) void recount()
  }
  const watchers: FSWatcher[] = []
  for (const path of paths) {
    try {
      const watcher = watch(path, { persistent: false }, onEvent)
      watcher.on('error', () => undefined)
      watchers.push(watcher)
    } catch {
      // No inotify (or the folder vanished): the timer still counts.
    }
  }
  const timer = setInterval(() => void recount(), FALLBACK_RECOUNT_MS)
  timer.unref()
  return {
    signal: controller.signal,
    stop: () => {
      clearInterval(timer)
      for (const watcher of watchers) watcher.close()
    },
  }
}
