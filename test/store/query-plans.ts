import type { Collection, Document, Filter } from 'mongodb'

/**
 * How the server plans `find(filter)`: FerretDB's SQLite backend reports
 * SQLite's EXPLAIN QUERY PLAN lines (`SCAN table` for a full scan, `SEARCH …
 * USING INDEX` otherwise); MongoDB reports a tree of stages (COLLSCAN, IXSCAN).
 */
export async function queryPlan<T extends Document>(collection: Collection<T>, filter: Filter<T> | Document, sort?: Document): Promise<string[]> {
  const cursor = (collection as unknown as Collection<Document>).find(filter as Filter<Document>)
  if (sort) cursor.sort(sort)
  const explained = await cursor.explain('queryPlanner')
  const planner = explained.queryPlanner as Document
  if (Array.isArray(planner.Plan)) return planner.Plan.map(String)
  const stages: string[] = []
  const walk = (stage: Document | undefined) => {
    if (!stage) return
    stages.push(String(stage.stage))
    if (typeof stage.indexName === 'string') stages.push(`INDEX ${stage.indexName}`)
    walk(stage.inputStage as Document | undefined)
    for (const input of (stage.inputStages as Document[] | undefined) ?? []) walk(input)
  }
  walk(planner.winningPlan as Document)
  return stages
}

/** True when no step of the plan reads a whole collection. */
export function usesIndex(plan: readonly string[]): boolean {
  const scans = plan.some((line) => / SCAN [^ ]+$/.test(line) || /detail=SCAN /.test(line) || line === 'COLLSCAN')
  const indexed = plan.some((line) => /USING (COVERING )?INDEX/.test(line) || line === 'IXSCAN' || line === 'IDHACK' || line === 'EXPRESS_IXSCAN' || line === 'EXPRESS_CLUSTERED_IXSCAN')
  return indexed && !scans
}

/** True when a step of the plan reads an index whose name has `key` in it (FerretDB and MongoDB name an index after its keys). */
export function usesIndexOn(plan: readonly string[], key: string): boolean {
  return plan.some((line) => {
    const name = /USING (?:COVERING )?INDEX (\S+)/.exec(line)?.[1] ?? /^INDEX (\S+)$/.exec(line)?.[1]
    return name !== undefined && name.includes(key)
  })
}
