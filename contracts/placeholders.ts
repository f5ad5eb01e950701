/**
 * Aliases and placeholders: the rules the API checks at submit time and the
 * runner applies when it turns a command string into paths. Pure functions,
 * shared by both so the two can never disagree on what `{{in_x}}` means.
 */
import { sequencePatternProblem } from './output-patterns.js'

/** `in_` then letters, digits or underscores; 64 characters at most. Also the API's JSON Schema pattern. */
export const INPUT_ALIAS_PATTERN = '^in_[A-Za-z0-9_]{1,61}$'
/** `out_` then letters, digits or underscores; 64 characters at most. */
export const OUTPUT_ALIAS_PATTERN = '^out_[A-Za-z0-9_]{1,60}$'
const INPUT_ALIAS = new RegExp(INPUT_ALIAS_PATTERN)
const OUTPUT_ALIAS = new RegExp(OUTPUT_ALIAS_PATTERN)

export function isInputAlias(name: string): boolean {
  return INPUT_ALIAS.test(name)
}

export function isOutputAlias(name: string): boolean {
  return OUTPUT_ALIAS.test(name)
}

/** Why `name` is not an alias of the given kind, or null when it is one. */
export function aliasProblem(name: string, kind: 'input' | 'output'): string | null {
  const prefix = kind === 'input' ? 'in_' : 'out_'
  if (!name.startsWith(prefix)) return `must start with "${prefix}"`
  if (!(kind === 'input' ? isInputAlias(name) : isOutputAlias(name))) {
    return `must be "${prefix}" followed by 1 to ${64 - prefix.length} letters, digits or underscores`
  }
  return null
}

/**
 * Both syntaxes of the spec: `{{in_video}}` and `<<in_video>>`, no spaces
 * inside: a command string is split into words before its placeholders are
 * resolved (contracts/ffmpeg-policy.ts), so a placeholder is one word.
 */
const PLACEHOLDER = /\{\{([^{}\s]*)\}\}|<<([^<>\s]*)>>/g

/** One placeholder found in a command string. */
export interface Placeholder {
  /** The name inside the brackets. */
  alias: string
  /** The placeholder exactly as written, e.g. `<<in_video>>`. */
  text: string
  index: number
}

/** Every placeholder in `command`, in order of appearance. */
export function extractPlaceholders(command: string): Placeholder[] {
  const found: Placeholder[] = []
  for (const match of command.matchAll(PLACEHOLDER)) {
    found.push({ alias: match[1] ?? match[2] ?? '', text: match[0], index: match.index })
  }
  return found
}

/** The aliases a command string may name. */
export interface DeclaredAliases {
  inputs: readonly string[]
  outputs: readonly string[]
}

/**
 * Problems with the placeholders of one command string: each must name a
 * declared alias. Returns human-readable reasons (empty when all is well);
 * the caller names the field and picks the status code its endpoint uses.
 */
export function placeholderProblems(command: string, declared: DeclaredAliases): string[] {
  const known = new Set([...declared.inputs, ...declared.outputs])
  const problems: string[] = []
  for (const { alias, text } of extractPlaceholders(command)) {
    if (alias === '') problems.push(`placeholder ${text} names no alias`)
    else if (!known.has(alias)) problems.push(`placeholder ${text} names no declared alias (declared: ${[...known].join(', ') || 'none'})`)
  }
  return problems
}

/** The declared output aliases that no placeholder of `commands` uses. */
export function unusedOutputs(commands: readonly string[], outputs: readonly string[]): string[] {
  const used = new Set(commands.flatMap((command) => extractPlaceholders(command).map((p) => p.alias)))
  return outputs.filter((alias) => !used.has(alias))
}

/** The aliases `command` refers to, each once, in order of first appearance. */
export function referencedAliases(command: string): string[] {
  return [...new Set(extractPlaceholders(command).map((p) => p.alias))]
}

/** A placeholder named an alias `substitutePlaceholders` was given no path for. */
export class UnresolvedPlaceholderError extends Error {
  override name = 'UnresolvedPlaceholderError'
}

/**
 * Replaces every placeholder with the path of its alias (the runner's work
 * directory paths). Throws UnresolvedPlaceholderError for an alias without a
 * path, so a command never runs with a literal `{{…}}` left in it.
 */
export function substitutePlaceholders(command: string, paths: Readonly<Record<string, string>>): string {
  return command.replace(PLACEHOLDER, (text: string, braces: string | undefined, angles: string | undefined) => {
    const alias = braces ?? angles ?? ''
    const path = Object.hasOwn(paths, alias) ? paths[alias] : undefined
    if (path === undefined) throw new UnresolvedPlaceholderError(`placeholder ${text} names no known alias`)
    return path
  })
}

/**
 * A plain filename in the work directory: no path separators, no `..`, no
 * leading dot or dash, 1–255 bytes; a `%` only in the sequences ffmpeg's
 * muxers expand (`thumb_%03d.jpg`, `stream_%v.m3u8`: output-patterns.ts).
 */
export function filenameProblem(filename: string): string | null {
  if (filename.length === 0) return 'must not be empty'
  if (Buffer.byteLength(filename) > 255) return 'must be at most 255 bytes'
  if (filename.includes('/') || filename.includes('\\')) return 'must be a plain filename without path separators'
  if (filename.includes('..')) return 'must not contain ".."'
  if (filename.startsWith('.')) return 'must not start with a dot'
  if (filename.startsWith('-')) return 'must not start with a dash (ffmpeg would read it as an option)'
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(filename)) return 'must not contain control characters'
  if (/[{}<>]/.test(filename)) return 'must not contain placeholder brackets'
  return sequencePatternProblem(filename)
}
