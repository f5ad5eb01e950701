import { readFile } from 'node:fs/promises'
import { run } from './run.js'

/** Mount points at or below `root`, deepest first, from /proc/self/mountinfo. */
export async function mountsUnder(root: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8')
  const points = info
    .split('\n')
    .filter(Boolean)
    // Field 5 is the mount point, with spaces and the like octal-escaped.
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((point) => point === root || point.startsWith(`${root}/`))
  return [...new Set(points)].sort((a, b) => b.length - a.length)
}

/** Lazily unmounts everything at or below `root` (overlay rootfs, netns, projected volumes). */
export async function unmountAll(root: string): Promise<void> {
  for (let pass = 0; pass < 5; pass++) {
    const points = await mountsUnder(root)
    if (points.length === 0) return
    for (const point of points) await run('umount', ['-l', point], { allowFailure: true })
  }
}
