/**
 * The work-directory cap of local mode, the counterpart of a Kubernetes Job's
 * emptyDir `sizeLimit`: while a runner works, its directory is measured every
 * `intervalMs`, and the first measurement over the cap calls `onExceeded`
 * (the executor then kills the runner and fails the command). It measures from
 * outside the runner and its tools, so it holds whether or not they run in a
 * sandbox, and whatever wrote the bytes: a fetch, yt-dlp, or an ffmpeg looping
 * its input forever.
 */
import { lstatSync, type Stats } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'

/**
 * Entries measured between two turns of the event loop. The walk runs beside
 * every command, four times a second: with a promise per lstat it cost ~8 ms
 * of CPU per 200 files, most of the service's CPU beside an HLS encode
 * (docs/benchmarks/multi-file.md); synchronous lstat calls cost ~1.5 ms, and
 * a batch this size holds the loop ~2 ms, however large the tree. Each
 * directory is still listed without blocking (one call, however many entries).
 */
const ENTRIES_PER_TURN = 256

/** Its lstat, or null when it vanished or cannot be read. */
function statOf(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null
  } catch {
    return null
  }
}

/**
 * Bytes a directory tree holds: per file, its apparent size or its allocated
 * blocks, whichever is larger, so a sparse file counts as what an upload would
 * read and a heap of small files as the disk they take. Entries that vanish
 * while it walks are skipped; symbolic links are not followed.
 */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0
  let sinceTurn = 0
  const pending = [dir]
  for (let current = pending.pop(); current !== undefined; current = pending.pop()) {
    for (const entry of await readdir(current, { withFileTypes: true }).catch(() => [])) {
      if (++sinceTurn >= ENTRIES_PER_TURN) {
        sinceTurn = 0
        await nextTurn()
      }
      const path = join(current, entry.name)
      if (entry.isDirectory()) pending.push(path)
      const stats = statOf(path)
      if (stats) total += Math.max(stats.size, stats.blocks * 512)
    }
  }
  return total
}

export interface WorkDirWatch {
  stop(): void
}

/** Measures `dir` until stopped; calls `onExceeded(bytes)` once, the first time it holds more than `maxBytes`. */
export function watchWorkDir(dir: string, maxBytes: number, onExceeded: (bytes: number) => void, intervalMs = 250): WorkDirWatch {
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  // One measurement at a time, the next scheduled when this one ends; a tree of many files (an image
  // sequence) takes longer to walk, and the pause grows with it so the watch costs at most a fifth of a core.
  const measure = async () => {
    const started = performance.now()
    const bytes = await directoryBytes(dir)
    if (stopped) return
    if (bytes > maxBytes) {
      stopped = true
      onExceeded(bytes)
      return
    }
    timer = setTimeout(() => void measure(), Math.max(intervalMs, 4 * (performance.now() - started)))
  }
  timer = setTimeout(() => void measure(), intervalMs)
  return {
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}

/** What a command that overfilled its work directory says (error_status WORK_DIR_LIMIT_EXCEEDED). */
export function workDirLimitMessage(maxBytes: number): string {
  return `the command's files grew past the work-directory limit of ${maxBytes} bytes (${describeBytes(maxBytes)})`
}

/** `8589934592` → `8 GiB`. */
function describeBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${Number(value.toFixed(1))} ${units[unit]}`
}
