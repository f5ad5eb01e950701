/**
 * TESTS ONLY: a planner (contracts/ffmpeg-plan.ts) without the argument
 * policy: the command strings as argvs with their placeholders resolved, any
 * option, path or URL allowed, so a test can show what the sandbox holds on
 * its own. Handed in only by the test entry points beside it.
 */
import type { FfmpegPlanner } from '../../contracts/ffmpeg-plan.js'
import { declaredOutputPath, isFolderOutput } from '../../contracts/output-patterns.js'
import { substitutePlaceholders } from '../../contracts/placeholders.js'
import { splitShellWords } from '../../contracts/shell-words.js'

export const unpolicedPlanner: FfmpegPlanner = (commands, context) => {
  const outputs = Object.entries(context.outputs)
  const paths = { ...context.inputs, ...Object.fromEntries(outputs.map(([alias, filename]) => [alias, declaredOutputPath(alias, filename)])) }
  const argvs = commands.map((command) => {
    const words = splitShellWords(substitutePlaceholders(command, paths))
    return context.mode === 'ffmpeg' ? words.slice(1) : words
  })
  return { ok: true, argvs, checks: commands.map(() => []), folders: Object.fromEntries(outputs.filter(([, filename]) => isFolderOutput(filename))) }
}
