/**
 * What a tool's stderr may say about where our files are, rewritten to what
 * the client wrote: the work directory's absolute path goes, `inputs/in_x.mp4`
 * becomes `in_x` and `outputs/small.mp4` becomes `small.mp4`, and a tool's
 * absolute path becomes its name. Pure.
 */
import { basename } from 'node:path'

const INPUT_PATH = /(?<![\w/.-])inputs\/(in_[A-Za-z0-9_]+)[^\s'",:;)\]]*/g
const OUTPUT_PATH = /(?<![\w/.-])outputs\/([A-Za-z0-9_][A-Za-z0-9_.-]*)/g

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * A rewriter for one command's log. `workDirs` are the absolute spellings of
 * its work directory (as given, and as the kernel resolves it); `toolPaths`
 * the absolute paths of the programs it runs.
 */
export function logPathRewriter(workDirs: readonly string[], toolPaths: readonly string[]): (text: string) => string {
  const dirs = [...new Set(workDirs.map((dir) => dir.replace(/\/+$/, '')).filter((dir) => dir.length > 1))].sort((a, b) => b.length - a.length)
  const tools = [...new Set(toolPaths.filter((path) => path.startsWith('/')))].sort((a, b) => b.length - a.length)
  const dirPattern = dirs.length > 0 ? new RegExp(`(?:${dirs.map(escapeRegExp).join('|')})(/|(?![\\w.-]))`, 'g') : null
  return (text) => {
    let out = dirPattern ? text.replace(dirPattern, (_match, slash: string) => (slash === '/' ? '' : '.')) : text
    for (const tool of tools) out = out.split(tool).join(basename(tool))
    return out.replace(INPUT_PATH, '$1').replace(OUTPUT_PATH, '$1')
  }
}
