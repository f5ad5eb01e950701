/**
 * The ffmpeg argument policy: turns one submitted command string into the argv
 * the runner executes, or says which argument is refused and why. The API calls
 * it at submit time and the runner again before running, so the two can never
 * disagree. The rule it enforces: ffmpeg may read only the command's fetched
 * inputs and files earlier commands of the same chain wrote, may write only
 * into its work directory, and may open no network or device.
 */
import { ALLOWED_FILTERS } from './ffmpeg-filters.js'
import { resolveFilterFiles } from './ffmpeg-filter-files.js'
import { planInput } from './ffmpeg-inputs.js'
import { ALLOWED_OPTIONS, MAX_FFMPEG_THREADS, splitOptionName } from './ffmpeg-options.js'
import { hasEmbeddedPlaceholder, placeholderAlias } from './ffmpeg-paths.js'
import type { WorkFileCheck } from './ffmpeg-work-files.js'
import { formatFilterArgs, FiltergraphSyntaxError, parseFiltergraph, type FilterNode } from './filtergraph.js'
import { checkMuxerOptionName, resolveOutputWord, type PendingMuxerOption } from './policy-outputs.js'
import { Refusal, refuse } from './policy-refusal.js'
import { ShellSyntaxError, splitShellWords } from './shell-words.js'

/** Machine-readable reasons a command string is refused. */
export type PolicyViolationCode =
  | 'SHELL_SYNTAX'
  | 'CONTROL_CHARACTER'
  | 'NOT_FFMPEG'
  | 'OPTION_NOT_ALLOWED'
  | 'MISSING_VALUE'
  | 'VALUE_NOT_ALLOWED'
  | 'FORMAT_NOT_ALLOWED'
  | 'FILTERGRAPH_SYNTAX'
  | 'FILTER_NOT_ALLOWED'
  | 'FILTER_OPTION_NOT_ALLOWED'
  | 'INPUT_NOT_ALLOWED'
  | 'OUTPUT_NOT_ALLOWED'
  | 'UNKNOWN_PLACEHOLDER'
  | 'PLACEHOLDER_NOT_WHOLE_ARGUMENT'
  | 'TRAILING_OPTIONS'
  | 'NO_INPUT'
  | 'NO_OUTPUT'

/** A refused command: `message` names the argument and the reason. */
export interface PolicyViolation {
  code: PolicyViolationCode
  message: string
}
export { INPUT_HARDENING } from './ffmpeg-inputs.js'

/** What the policy needs to know about the command's files. */
export interface PolicyContext {
  /** `'ffmpeg'`: the string starts with the word `ffmpeg`; `'arguments'`: it starts with the arguments. */
  mode: 'ffmpeg' | 'arguments'
  /** Input alias → work-dir path of the fetched file (see ffmpeg-paths.ts). */
  inputs: Record<string, string>
  /** Output alias → declared plain filename. */
  outputs: Record<string, string>
  /** Plain filename or output alias → work-dir path, for files earlier commands of a chain wrote. */
  written?: ReadonlyMap<string, string>
  /** True in a chain: a command may write plain filenames that are not declared outputs. */
  allowIntermediateFiles?: boolean
  /**
   * True when the command brings an input_compressed_folder: its entries are
   * unpacked into the work dir before the first command, so a command may read
   * relative paths in the work dir that are not known when the policy runs
   * (the runner checks at run time that each names an unpacked entry).
   */
  folder?: boolean
}

/** An accepted command. */
export interface PolicyResult {
  /** ffmpeg's argv (without the program name), hardened and with paths substituted. */
  argv: string[]
  /** Names (plain filenames and output aliases) this command writes → work-dir path. */
  writes: Map<string, string>
  /** What the runner checks in the work dir before this command runs (folder entries, lists, subtitle files). */
  checks: WorkFileCheck[]
  /**
   * Output aliases that write a folder of files (`outputs/<alias>/`, see
   * output-patterns.ts) → the name, or pattern, of the main file in it: the
   * master playlist when `-master_pl_name` names one, else the declared filename.
   */
  folders: Map<string, string>
}

export type PolicyOutcome = { ok: true; value: PolicyResult } | { ok: false; violation: PolicyViolation }

/** Options placed before the user's: no stdin, no banner, overwrite (a chain may rewrite its own files). */
export const LEADING_OPTIONS: readonly string[] = ['-hide_banner', '-nostdin', '-y']

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/

/** Applies the policy to one command string. */
export function applyFfmpegPolicy(command: string, context: PolicyContext): PolicyOutcome {
  try {
    return { ok: true, value: buildArgv(command, context) }
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, violation: error.violation }
    throw error
  }
}

function buildArgv(command: string, context: PolicyContext): PolicyResult {
  let words: string[]
  try {
    words = splitShellWords(command)
  } catch (error) {
    if (error instanceof ShellSyntaxError) refuse('SHELL_SYNTAX', `the command cannot be split into arguments: ${error.message}`)
    throw error
  }
  // A NUL cannot be passed to a program at all; the other control characters end up in
  // ffmpeg's own text formats and logs, where they mean something else.
  const controlled = words.find((word) => CONTROL_CHARACTER.test(word))
  if (controlled !== undefined) {
    refuse('CONTROL_CHARACTER', `${JSON.stringify(controlled)}: arguments must not contain control characters (NUL, newline, tab, escape …)`)
  }
  if (context.mode === 'ffmpeg') {
    if (words[0] !== 'ffmpeg') refuse('NOT_FFMPEG', 'the command must start with the word "ffmpeg"')
    words = words.slice(1)
  } else if (words[0] === 'ffmpeg') {
    refuse('NOT_FFMPEG', 'this command takes ffmpeg arguments only: leave out the word "ffmpeg"')
  }

  const argv: string[] = [...LEADING_OPTIONS]
  const writes = new Map<string, string>()
  const checks: WorkFileCheck[] = []
  const folders = new Map<string, string>()
  // Per-file options seen since the last input or output, the format and the muxer options among them.
  let pending: string[] = []
  let pendingFormat: string | null = null
  let pendingMuxer: PendingMuxerOption[] = []
  let inputCount = 0

  for (let index = 0; index < words.length; index++) {
    const word = words[index] as string
    const option = word.startsWith('-') && word !== '-' ? splitOptionName(word) : null
    if (word.startsWith('-') && word !== '-' && !option) refuse('OPTION_NOT_ALLOWED', `"${word}" is not an allowed option`)
    if (!option) {
      // A word that is not an option is an output, as ffmpeg reads it (policy-outputs.ts; a tee word holds placeholders of its own).
      const output = resolveOutputWord(word, pendingFormat, pending, pendingMuxer, context)
      argv.push(...output.options, output.word)
      for (const [name, path] of output.writes) writes.set(name, path)
      for (const [alias, main] of output.folders) folders.set(alias, main)
      pending = []
      pendingFormat = null
      pendingMuxer = []
      continue
    }
    if (hasEmbeddedPlaceholder(word)) {
      refuse('PLACEHOLDER_NOT_WHOLE_ARGUMENT', `"${word}": a placeholder must be a whole argument on its own`)
    }
    checkMuxerOptionName(option.name, option.spec)
    const rule = ALLOWED_OPTIONS.get(option.name)
    if (!rule) refuse('OPTION_NOT_ALLOWED', `option ${word} is not allowed`)
    if (rule.kind === 'flag') {
      ;(rule.global ? argv : pending).push(word)
      continue
    }
    const value = words[index + 1]
    if (value === undefined) refuse('MISSING_VALUE', `option ${word} needs a value`)
    index++
    // A filtergraph may hold placeholders as whole values of file options: checked filter by filter.
    if (hasEmbeddedPlaceholder(value) && rule.kind !== 'filtergraph') {
      refuse('PLACEHOLDER_NOT_WHOLE_ARGUMENT', `${word} ${value}: a placeholder must be a whole argument on its own`)
    }
    if (placeholderAlias(value) !== null && rule.kind !== 'input') {
      refuse('PLACEHOLDER_NOT_WHOLE_ARGUMENT', `${word} ${value}: placeholders may only name an input (-i) or an output`)
    }
    switch (rule.kind) {
      case 'input': {
        if (pendingMuxer.length > 0) refuse('OPTION_NOT_ALLOWED', `-${(pendingMuxer[0] as PendingMuxerOption).name} is an output option, not an input's`)
        const input = planInput(value, pendingFormat, context)
        argv.push(...pending, ...input.options, '-i', input.url ?? input.path)
        checks.push(...input.checks)
        pending = []
        pendingFormat = null
        inputCount++
        continue
      }
      case 'format':
        if (!/^[a-z0-9_]+$/.test(value)) refuse('FORMAT_NOT_ALLOWED', `-f ${value} is not a format name`)
        pendingFormat = value
        break
      case 'filtergraph': {
        const graph = checkFiltergraph(word, value, context)
        checks.push(...graph.checks)
        ;(rule.global ? argv : pending).push(word, graph.text)
        continue
      }
      case 'threads':
        if (!/^\d{1,3}$/.test(value) || Number(value) > MAX_FFMPEG_THREADS) {
          refuse('VALUE_NOT_ALLOWED', `${word} ${value}: a number of threads must be a whole number from 0 (automatic) to ${MAX_FFMPEG_THREADS}`)
        }
        break
      case 'value':
        break
      case 'muxer':
        // Checked against the output's muxer when the output comes (policy-outputs.ts).
        pendingMuxer.push({ name: option.name, valueIndex: pending.length + 1 })
        break
    }
    ;(rule.global ? argv : pending).push(word, value)
  }
  if (pending.length > 0) {
    refuse('TRAILING_OPTIONS', `${pending.join(' ')}: options after the last output apply to nothing`)
  }
  if (inputCount === 0) refuse('NO_INPUT', 'the command reads no input (-i)')
  if (writes.size === 0) refuse('NO_OUTPUT', 'the command writes no output')
  return { argv, writes, checks, folders }
}

/**
 * Checks every filter of a graph and returns the graph ffmpeg runs: the
 * user's text, with the arguments of each filter whose file options named an
 * alias or a chain file rewritten to the work-dir path.
 */
function checkFiltergraph(option: string, graph: string, context: PolicyContext): { text: string; checks: WorkFileCheck[] } {
  const filters = parsedGraph(option, graph)
  const checks: WorkFileCheck[] = []
  const rewrites: Array<{ filter: FilterNode; args: string }> = []
  for (const filter of filters) {
    if (!ALLOWED_FILTERS.has(filter.name)) refuse('FILTER_NOT_ALLOWED', `${option}: filter ${filter.name} is not allowed`)
    const resolved = resolveFilterFiles(filter, option, context)
    checks.push(...resolved.checks)
    if (resolved.options !== null) rewrites.push({ filter, args: formatFilterArgs(resolved.options) })
  }
  let text = graph
  // From the last filter back, so earlier spans keep their offsets.
  for (const { filter, args } of rewrites.reverse()) {
    const [start, end] = filter.argsSpan as [number, number]
    text = text.slice(0, start) + args + text.slice(end)
  }
  if (rewrites.length > 0) assertSameGraph(option, filters, parsedGraph(option, text))
  return { text, checks }
}

function parsedGraph(option: string, graph: string): FilterNode[] {
  try {
    return parseFiltergraph(graph)
  } catch (error) {
    if (error instanceof FiltergraphSyntaxError) refuse('FILTERGRAPH_SYNTAX', `${option}: ${error.message}`)
    throw error
  }
}

/** A rewritten graph must hold the same filters and links as the user's: only option values may differ. */
function assertSameGraph(option: string, before: readonly FilterNode[], after: readonly FilterNode[]): void {
  const shape = (nodes: readonly FilterNode[]): string =>
    JSON.stringify(nodes.map((node) => [node.name, node.inputs, node.outputs, node.options.filter((o) => o.key !== 'format_opts').map((o) => o.key)]))
  if (shape(before) !== shape(after)) refuse('FILTERGRAPH_SYNTAX', `${option}: the graph could not be rewritten with work-dir paths`)
}
