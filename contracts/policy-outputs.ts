/**
 * The argument policy's output words: where each output is written, the
 * multi-file muxers' options that name files (muxer-options.ts), and tee's
 * slaves (tee-slaves.ts). Split out of ffmpeg-policy.ts, which calls
 * resolveOutputWord once per output word.
 *
 * Layout: a single-file output is `outputs/<filename>` as before; an output
 * whose declared filename names a folder of files (output-patterns.ts) is
 * written into `outputs/<alias>/`, so every file there belongs to that alias.
 * The multi-file muxers (hls, dash, segment) may write only such outputs, and
 * every file they name is resolved inside that folder.
 */
import { ALLOWED_MUXERS } from './ffmpeg-formats.js'
import { describeBadFilename, hasEmbeddedPlaceholder, placeholderAlias } from './ffmpeg-paths.js'
import type { PolicyContext } from './ffmpeg-policy.js'
import { MULTI_FILE_MUXERS, MUXER_OPTIONS, muxerOptionValueProblem, REFUSED_MUXER_OPTIONS } from './muxer-options.js'
import { declaredOutputPath, isFolderOutput, outputFolder, playlistMuxerOf } from './output-patterns.js'
import { filenameProblem } from './placeholders.js'
import { refuse } from './policy-refusal.js'
import { formatTeeSlaves, parseTeeSlaves, TeeSyntaxError, type TeeSlave } from './tee-slaves.js'

/** A muxer option seen before an output: its name and where its value sits in the pending options. */
export interface PendingMuxerOption {
  name: string
  valueIndex: number
}

export interface ResolvedOutput {
  /** The word ffmpeg gets: a work-dir path, or tee's slave list. */
  word: string
  /** The pending options, with names of files rewritten into the output's folder. */
  options: string[]
  /** Names a later command may read it by → work-dir path. */
  writes: Array<[string, string]>
  /** Multi-file output alias → its main file's name (or pattern) inside its folder. */
  folders: Array<[string, string]>
}

interface Target {
  path: string
  names: string[]
  /** The declared output it writes, if any. */
  alias: string | null
  filename: string
  folder: boolean
}

/** The rule of a muxer-only option (ffmpeg-options.ts lists them as kind 'muxer'), or a refusal naming why it is refused. */
export function checkMuxerOptionName(option: string, spec: string | null): void {
  const reason = REFUSED_MUXER_OPTIONS.get(option)
  if (reason !== undefined) refuse('OPTION_NOT_ALLOWED', `option -${option} is not allowed: it ${reason}`)
  if (spec !== null && MUXER_OPTIONS.has(option)) refuse('OPTION_NOT_ALLOWED', `option -${option} takes no stream specifier`)
}

/** Resolves one output word with the options pending before it. */
export function resolveOutputWord(
  word: string,
  format: string | null,
  pending: readonly string[],
  muxerOptions: readonly PendingMuxerOption[],
  context: PolicyContext,
): ResolvedOutput {
  if (format === 'tee') {
    if (muxerOptions.length > 0) refuse('OPTION_NOT_ALLOWED', `-${(muxerOptions[0] as PendingMuxerOption).name}: give a tee slave its options inside its [brackets]`)
    return resolveTee(word, pending, context)
  }
  if (hasEmbeddedPlaceholder(word)) refuse('PLACEHOLDER_NOT_WHOLE_ARGUMENT', `"${word}": a placeholder must be a whole argument on its own`)
  const options = [...pending]
  const values = muxerOptions.map(({ name, valueIndex }) => [name, options[valueIndex] as string] as [string, string])
  const { target, rewritten, main } = resolveWithMuxerOptions(word, format, values, context)
  muxerOptions.forEach(({ valueIndex }, index) => (options[valueIndex] = (rewritten[index] as [string, string])[1]))
  return { word: target.path, options, writes: target.names.map((name) => [name, target.path]), folders: target.folder && target.alias ? [[target.alias, main]] : [] }
}

/**
 * Checks an output's muxer and its muxer options; returns the target, the
 * options with `cwd` file names rewritten into the output's folder, and the
 * output's main file name.
 */
function resolveWithMuxerOptions(word: string, format: string | null, options: ReadonlyArray<[string, string]>, context: PolicyContext) {
  if (format !== null && !ALLOWED_MUXERS.has(format)) refuse('FORMAT_NOT_ALLOWED', `-f ${format} is not an allowed output format`)
  const target = resolveTarget(word, format, context)
  const muxer = format ?? playlistMuxerOf(target.filename)
  if (muxer !== null && MULTI_FILE_MUXERS.has(muxer)) checkMultiFileTarget(word, muxer, target)
  let main = target.filename
  const rewritten = options.map(([name, value]): [string, string] => {
    const rule = MUXER_OPTIONS.get(name)
    if (!rule) refuse('OPTION_NOT_ALLOWED', `option -${name} is not allowed`)
    if (muxer === null || !rule.muxers.includes(muxer)) {
      refuse('OPTION_NOT_ALLOWED', `option -${name} applies to -f ${rule.muxers[0]} outputs only, and ${word} is ${muxer === null ? 'not one' : `-f ${muxer}`}`)
    }
    const problem = muxerOptionValueProblem(name, rule, value)
    if (problem !== null) refuse('VALUE_NOT_ALLOWED', `-${name} ${value}: the value ${problem}`)
    if (name === 'master_pl_name') main = value
    // A cwd-relative name is written where the output's other files are; the playlist lists its basename.
    return [name, rule.value === 'cwd' ? `${outputFolder(target.alias as string)}/${value}` : value]
  })
  return { target, rewritten, main }
}

function checkMultiFileTarget(word: string, muxer: string, target: Target): void {
  if (target.alias === null) {
    refuse('OUTPUT_NOT_ALLOWED', `output ${word}: the ${muxer} muxer writes many files, so its output must be declared in output_files`)
  }
  const playlist = muxer === 'hls' ? 'm3u8' : muxer === 'dash' ? 'mpd' : null
  if (playlist !== null && playlistMuxerOf(target.filename) !== muxer) {
    refuse('OUTPUT_NOT_ALLOWED', `output ${word} → "${target.filename}": a -f ${muxer} output's filename must end in .${playlist}`)
  }
  if (playlist === null && !target.filename.includes('%')) {
    refuse('OUTPUT_NOT_ALLOWED', `output ${word} → "${target.filename}": a -f ${muxer} output's filename must hold a sequence such as %03d`)
  }
}

/** Where an output word is written, and by which names a later command may read it. */
function resolveTarget(word: string, format: string | null, context: PolicyContext): Target {
  // `-f null -` discards the output: the null muxer opens no file, so `-` reaches no pipe.
  if (word === '-' && format === 'null') return { path: '-', names: ['-'], alias: null, filename: '-', folder: false }
  const alias = placeholderAlias(word)
  if (alias !== null) {
    const filename = context.outputs[alias]
    if (filename !== undefined) return declaredTarget(alias, checkedFilename(filename, word), [alias, filename])
    if (alias in context.inputs) refuse('OUTPUT_NOT_ALLOWED', `${word}: an input cannot be written`)
    refuse('UNKNOWN_PLACEHOLDER', `${word}: ${alias} is not a declared output`)
  }
  // A declared filename lives under outputs/, so ffmpeg can never read a protocol into it:
  // the API's filename rule is enough there. Intermediate names sit in the work dir root and stay strict.
  const declaredAs = Object.entries(context.outputs).filter(([, filename]) => filename === word).map(([a]) => a)
  if (declaredAs.length > 0) return declaredTarget(declaredAs[0] as string, checkedFilename(word, word), [word, ...declaredAs])
  const why = describeBadFilename(word)
  if (why !== null) refuse('OUTPUT_NOT_ALLOWED', `output ${word}: ${why}`)
  if (context.allowIntermediateFiles) return { path: word, names: [word], alias: null, filename: word, folder: false }
  refuse('OUTPUT_NOT_ALLOWED', `output ${word}: not a declared output; write {{out_alias}} or a filename from output_files`)
}

function declaredTarget(alias: string, filename: string, names: string[]): Target {
  return { path: declaredOutputPath(alias, filename), names, alias, filename, folder: isFolderOutput(filename) }
}

/** A declared output filename, held to contracts/placeholders.ts's rule (the API's). */
function checkedFilename(filename: string, word: string): string {
  const why = filenameProblem(filename)
  if (why !== null) refuse('OUTPUT_NOT_ALLOWED', `${word} → "${filename}": the filename ${why}`)
  return filename
}

/** Options of a tee slave besides the muxer's own: tee.c consumes these itself. */
const TEE_OWN_OPTIONS = new Set(['f', 'select', 'onfail'])
/** Container options a slave may pass to its muxer (their values are plain). */
const TEE_CONTAINER_OPTIONS = new Set(['movflags', 'brand', 'use_editlist', 'write_tmcd', 'id3v2_version', 'start_number', 'update'])
/** A resolved slave target must not hold tee's own delimiters. */
const TEE_SAFE_PATH = /^[A-Za-z0-9_.%/-]+$/

/** Tee: every slave is an output of its own, held to the same rules. */
function resolveTee(word: string, pending: readonly string[], context: PolicyContext): ResolvedOutput {
  let slaves: TeeSlave[]
  try {
    slaves = parseTeeSlaves(word)
  } catch (error) {
    if (error instanceof TeeSyntaxError) refuse('OUTPUT_NOT_ALLOWED', `-f tee ${word}: ${error.message}`)
    throw error
  }
  const writes: Array<[string, string]> = []
  const folders: Array<[string, string]> = []
  const resolved = slaves.map((slave): TeeSlave => {
    if (hasEmbeddedPlaceholder(slave.target)) refuse('PLACEHOLDER_NOT_WHOLE_ARGUMENT', `-f tee slave "${slave.target}": a placeholder must be the slave's whole output`)
    const format = slave.options.find(([key]) => key === 'f')?.[1] ?? null
    if (format === 'tee') refuse('FORMAT_NOT_ALLOWED', '-f tee: a slave cannot be a tee itself')
    const muxerOptions = slave.options.filter(([key]) => !TEE_OWN_OPTIONS.has(key) && !TEE_CONTAINER_OPTIONS.has(key) && !key.startsWith('bsfs'))
    for (const [key, value] of slave.options) checkTeeOption(key, value)
    for (const [key] of muxerOptions) checkMuxerOptionName(key, null)
    const { target, rewritten, main } = resolveWithMuxerOptions(slave.target, format, muxerOptions, context)
    if (!TEE_SAFE_PATH.test(target.path)) refuse('OUTPUT_NOT_ALLOWED', `-f tee slave ${slave.target}: its filename must use only letters, digits and _ . % -`)
    writes.push(...target.names.map((name): [string, string] => [name, target.path]))
    if (target.folder && target.alias) folders.push([target.alias, main])
    const values = new Map(rewritten)
    return { options: slave.options.map(([key, value]) => [key, values.get(key) ?? value]), target: target.path }
  })
  return { word: formatTeeSlaves(resolved), options: [...pending], writes, folders }
}

function checkTeeOption(key: string, value: string): void {
  if (key === 'use_fifo' || key === 'fifo_options') refuse('OPTION_NOT_ALLOWED', `-f tee slave option ${key} is not allowed`)
  if (key === 'onfail' && value !== 'abort' && value !== 'ignore') refuse('VALUE_NOT_ALLOWED', `-f tee slave option onfail=${value}: abort or ignore`)
  if ((TEE_OWN_OPTIONS.has(key) || TEE_CONTAINER_OPTIONS.has(key) || key.startsWith('bsfs')) && !/^[A-Za-z0-9_.,+-]+$/.test(value)) {
    refuse('VALUE_NOT_ALLOWED', `-f tee slave option ${key}=${value}: a plain value of letters, digits and _ . , + -`)
  }
  if (key.startsWith('bsfs') && !/^bsfs(?:\/[avsd])?$/.test(key)) refuse('OPTION_NOT_ALLOWED', `-f tee slave option ${key} is not bsfs or bsfs/<stream>`)
}
