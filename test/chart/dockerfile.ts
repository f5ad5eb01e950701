/**
 * Reading a Dockerfile the way the tests need it: instructions with their
 * continuation lines joined, and stages with the ARG defaults before the first
 * FROM substituted (test/chart/dockerfiles.test.ts checks the text,
 * test/chart/images.test.ts checks the built images against it).
 */
export interface Instruction {
  keyword: string
  args: string
  line: number
}

/** Instructions of a Dockerfile: continuation lines joined, comments and blank lines dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = []
  let pending: { text: string; line: number } | null = null
  text.split('\n').forEach((raw, index) => {
    const line = raw.trimEnd()
    if (pending === null && (line.trim() === '' || line.trimStart().startsWith('#'))) return
    if (pending !== null && line.trimStart().startsWith('#')) return
    const joined = pending ? `${pending.text} ${line.trim()}` : line.trim()
    const start = pending?.line ?? index + 1
    if (joined.endsWith('\\')) {
      pending = { text: joined.slice(0, -1).trimEnd(), line: start }
      return
    }
    pending = null
    const [keyword, ...rest] = joined.split(/\s+/)
    out.push({ keyword: keyword!.toUpperCase(), args: rest.join(' '), line: start })
  })
  return out
}

/** The value of `${NAME}` / `$NAME` from ARG defaults declared before the first FROM. */
function substitute(value: string, args: Map<string, string>): string {
  return value.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, name: string) => args.get(name) ?? '')
}

export interface Stage {
  image: string
  name: string | undefined
  instructions: Instruction[]
}

export function stages(instructions: Instruction[]): { globalArgs: Map<string, string>; stages: Stage[] } {
  const globalArgs = new Map<string, string>()
  const result: Stage[] = []
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const match = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)
      if (!match) throw new Error(`line ${ins.line}: unreadable FROM ${ins.args}`)
      result.push({ image: substitute(match[1]!, globalArgs), name: match[2], instructions: [] })
    } else if (result.length === 0) {
      if (ins.keyword === 'ARG') {
        const [name, value] = ins.args.split('=', 2)
        globalArgs.set(name!.trim(), (value ?? '').trim())
      }
    } else {
      result.at(-1)!.instructions.push(ins)
    }
  }
  return { globalArgs, stages: result }
}
