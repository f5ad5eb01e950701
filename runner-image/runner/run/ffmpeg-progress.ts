/**
 * Reads what ffmpeg writes for `-progress pipe:1` (key=value lines, a block
 * per update ending in `progress=continue|end`) and the `Duration:` line of
 * its stderr, and turns them into a percent. Pure: fed text, returns numbers.
 */

/** `Duration: 00:01:02.50,` → 62.5; null when absent or `N/A`. */
export function parseDurationLine(text: string): number | null {
  const match = /Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/.exec(text)
  if (!match) return null
  return Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3])
}

/** Accumulates `-progress` output; `update` returns the seconds of output written so far, when it changed. */
export class ProgressReader {
  private buffer = ''
  private outSeconds = 0
  private ended = false

  /** Feeds a chunk of stdout; returns the latest out_time in seconds if a block completed. */
  update(chunk: string): number | null {
    this.buffer += chunk
    let changed = false
    let newline: number
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline).trim()
      this.buffer = this.buffer.slice(newline + 1)
      const eq = line.indexOf('=')
      if (eq < 0) continue
      const key = line.slice(0, eq)
      const value = line.slice(eq + 1)
      // out_time_us is the precise one; out_time_ms is also microseconds in ffmpeg 5 (a known misnomer).
      if (key === 'out_time_us' || (key === 'out_time_ms' && this.outSeconds === 0)) {
        const micros = Number(value)
        if (Number.isFinite(micros) && micros >= 0) this.outSeconds = micros / 1e6
      } else if (key === 'progress') {
        changed = true
        if (value === 'end') this.ended = true
      }
    }
    return changed ? this.outSeconds : null
  }

  get done(): boolean {
    return this.ended
  }
}

/**
 * Percent of a whole command: `index` of `count` command strings done, the
 * current one at `outSeconds` of `durationSeconds`. Never 100 before the end:
 * `-t` or a filter may stop ffmpeg before the input's duration.
 */
export function commandPercent(index: number, count: number, outSeconds: number, durationSeconds: number | null): number | null {
  if (durationSeconds === null || durationSeconds <= 0 || count <= 0) return null
  const fraction = Math.min(outSeconds / durationSeconds, 0.99)
  return Math.floor(((index + fraction) / count) * 100)
}
