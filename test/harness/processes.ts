import { readdir, readFile } from 'node:fs/promises'

/** Pids of live processes whose command line mentions `needle`: for tests that nothing is left running. */
export async function processesMentioning(needle: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(needle)) pids.push(Number(entry))
  }
  return pids
}
