/** What the operator-side benchmarks share: percentiles of sorted samples and the measure | value | target table they print. */

/** The p-th percentile (nearest rank) of ascending samples. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** Prints rows of [measure, value, target] as an aligned table on stdout. */
export function printTable(rows: Array<[string, string, string]>): void {
  const width = Math.max(...rows.map((r) => r[0].length))
  console.log(`${'measure'.padEnd(width)} | ${'value'.padStart(10)} | target`)
  console.log(`${'-'.repeat(width)}-|-${'-'.repeat(10)}-|-------`)
  for (const [name, value, target] of rows) console.log(`${name.padEnd(width)} | ${value.padStart(10)} | ${target}`)
}
