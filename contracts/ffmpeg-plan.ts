/**
 * Applies the ffmpeg policy to all the command strings of one command (one
 * for FFMPEG_COMMAND, up to ten in order for CHAINED_COMMAND), threading the
 * files each writes into the next, and checks that every declared output is
 * written by some command.
 */
import { applyFfmpegPolicy, type PolicyContext, type PolicyViolation } from './ffmpeg-policy.js'
import { declaredOutputPath } from './output-patterns.js'
import { isInputAlias, isOutputAlias, substitutePlaceholders } from './placeholders.js'
import { splitShellWords } from './shell-words.js'

/**
 * The argv of each command string, in order, and the outputs that write a
 * folder of files: alias → its main file's name or pattern (PolicyResult.folders).
 */
export type PlanOutcome =
  | { ok: true; argvs: string[][]; folders: Record<string, string> }
  | { ok: false; violation: PolicyViolation & { commandIndex: number | null } }

/** Plans one or more command strings that run in order in one work directory. */
export function planFfmpegCommands(
  commands: readonly string[],
  context: Omit<PolicyContext, 'written' | 'allowIntermediateFiles'>,
): PlanOutcome {
  const badAlias =
    Object.keys(context.inputs).find((alias) => !isInputAlias(alias)) ??
    Object.keys(context.outputs).find((alias) => !isOutputAlias(alias))
  if (badAlias !== undefined) {
    return { ok: false, violation: { code: 'UNKNOWN_PLACEHOLDER', message: `"${badAlias}" is not a valid alias (in_… for inputs, out_… for outputs)`, commandIndex: null } }
  }
  const written = new Map<string, string>()
  const folders: Record<string, string> = {}
  const argvs: string[][] = []
  const chained = commands.length > 1
  for (const [commandIndex, command] of commands.entries()) {
    const outcome = applyFfmpegPolicy(command, { ...context, written, allowIntermediateFiles: chained })
    if (!outcome.ok) {
      const prefix = chained ? `command ${commandIndex + 1}: ` : ''
      return { ok: false, violation: { ...outcome.violation, message: prefix + outcome.violation.message, commandIndex } }
    }
    argvs.push(outcome.value.argv)
    for (const [name, path] of outcome.value.writes) written.set(name, path)
    for (const [alias, main] of outcome.value.folders) folders[alias] = main
  }
  const missing = Object.keys(context.outputs).filter((alias) => !written.has(alias))
  if (missing.length > 0) {
    return {
      ok: false,
      violation: {
        code: 'NO_OUTPUT',
        message: `output_files ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not written by any command`,
        commandIndex: null,
      },
    }
  }
  return { ok: true, argvs, folders }
}

/**
 * TESTS ONLY: the command strings as argvs with placeholders resolved and no
 * policy at all (no hardening, any path, any URL), so a test can show what
 * the sandbox holds when the policy is absent. Reached only through options
 * named `unsafeDisableFfmpegPolicyForTests` that no configuration, variable
 * or request sets.
 */
export function unpolicedArgvsForTests(commands: readonly string[], context: Pick<PolicyContext, 'mode' | 'inputs' | 'outputs'>): string[][] {
  const paths = { ...context.inputs, ...Object.fromEntries(Object.entries(context.outputs).map(([alias, filename]) => [alias, declaredOutputPath(alias, filename)])) }
  return commands.map((command) => {
    const words = splitShellWords(substitutePlaceholders(command, paths))
    return context.mode === 'ffmpeg' ? words.slice(1) : words
  })
}
