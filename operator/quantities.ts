/** Kubernetes resource quantities, read as far as the Job builder compares them. */

/** A quantity of memory in MiB, for comparing a request with a limit; null when it is not one we read. */
export function mebibytes(quantity: string): number | null {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity)
  if (!match) return null
  const scale: Record<string, number> = { '': 1 / 1024 ** 2, Ki: 1 / 1024, Mi: 1, Gi: 1024, Ti: 1024 ** 2, k: 1000 / 1024 ** 2, M: 1e6 / 1024 ** 2, G: 1e9 / 1024 ** 2, T: 1e12 / 1024 ** 2 }
  return Number(match[1]) * scale[match[2] ?? '']!
}

/** A CPU quantity ("500m", "2", "1.5") in millicores; null when it is not one. */
export function millicores(quantity: string): number | null {
  const match = /^(\d+(?:\.\d+)?)(m)?$/.exec(quantity)
  if (!match) return null
  return match[2] === 'm' ? Number(match[1]) : Number(match[1]) * 1000
}

/** The smaller of two quantities of one kind; `ours` when `theirs` is not one we read. */
export function atMost(ours: string, theirs: string | undefined, read: (q: string) => number | null): string {
  const limit = theirs === undefined ? null : read(theirs)
  const own = read(ours)
  return limit !== null && own !== null && limit < own ? theirs! : ours
}
