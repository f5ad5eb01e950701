/**
 * Applies the ffmpeg policy to all the command strings of one command (one
 * for FFMPEG_COMMAND, up to ten in order for CHAINED_COMMAND), threading the
 * files each writes into the next, and checks that every declared output is
 * written by some command.
 */
import { applyFfmpegPolicy, type PolicyContext, type PolicyViolation } from './ffmpeg-policy.js'
import type { WorkFileCheck } from './ffmpeg-work-files.js'
import { isInputAlias, isOutputAlias } from './placeholders.js'

/**
 * The argv of each command string, in order, what the runner checks in the
 * work dir before each, and the outputs that write a folder of files: alias →
 * its main file's name or pattern (PolicyResult.folders).
 */
export type PlanOutcome =
  | { ok: true; argvs: string[][]; checks: WorkFileCheck[][]; folders: Record<string, string> }
  | { ok: false; violation: PolicyViolation & { commandIndex: number | null } }

/**
 * What plans a command's strings: planFfmpegCommands, always, in the service
 * (api/main.ts and the runner's entry points hand in no other). A test's own
 * composition root hands in a planner without the policy, to show what the
 * sandbox alone holds (test/e2e/unpoliced-service.ts).
 */
export type FfmpegPlanner = typeof planFfmpegCommands

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
  const checks: WorkFileCheck[][] = []
  const chained = commands.length > 1
  for (const [commandIndex, command] of commands.entries()) {
    const outcome = applyFfmpegPolicy(command, { ...context, written, allowIntermediateFiles: chained })
    if (!outcome.ok) {
      const prefix = chained ? `command ${commandIndex + 1}: ` : ''
      return { ok: false, violation: { ...outcome.violation, message: prefix + outcome.violation.message, commandIndex } }
    }
    argvs.push(outcome.value.argv)
    checks.push(outcome.value.checks)
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
  return { ok: true, argvs, checks, folders }
}
