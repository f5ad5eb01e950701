/**
 * Per-command limits: `max_command_run_seconds` (the whole command's wall
 * time) and `vcpu_count` (CPU cores its tools may use). Each plan has a
 * default, used when the request names none, and a maximum; a value above it
 * is 422 naming the field and the maximum. The resolved values are recorded
 * on the command and travel to the runner's sandbox (CommandSpec.limits).
 * Pure.
 */
import { Type } from 'typebox'
import type { CommandLimits, FolderLimits } from '../../contracts/command-spec.js'
import type { Plan } from '../accounts/plans.js'
import { ValidationError } from '../errors/api-errors.js'
import { RetentionDaysField } from '../files/retention.js'

/** The longest run any plan may allow: the MediaCommand CRD's bound on timeLimitSeconds. */
export const MAX_RUN_SECONDS_CEILING = 86_400
/** The most cores any plan may allow; Kubernetes counts CPU in millicores. */
export const MAX_VCPU_CEILING = 64
/** The fewest cores a command may ask for: 100 millicores. */
export const MIN_VCPU = 0.1

/** One plan's defaults and maximums (config: COMMAND_RUN_SECONDS_DEFAULT_<PLAN>, …; README's limits table). */
export interface PlanCommandLimits {
  runSecondsDefault: number
  runSecondsMax: number
  vcpuDefault: number
  vcpuMax: number
  /** The run container's memory limit on Kubernetes, in MiB. */
  memoryMib: number
  /** Caps on an input_compressed_folder (COMMAND_FOLDER_MAX_BYTES_<PLAN>, …_ENTRIES_…, …_RATIO_…). */
  folder: FolderLimits
  /** Most files a command's outputs may hold together (a numbered sequence, HLS segments …). */
  maxOutputFiles: number
}

export type CommandLimitsByPlan = Record<Plan, PlanCommandLimits>

const MIB = 1024 ** 2

/**
 * Folder caps: the uncompressed size stays well inside the local work dir's
 * cap (COMMAND_WORK_DIR_MAX_BYTES, 8 GiB) with room for outputs; a ratio of
 * 50 to 200 passes any media folder (frames, clips and text compress far
 * less) and stops a deflate bomb (about 1000 to 1).
 */
export const DEFAULT_COMMAND_LIMITS: CommandLimitsByPlan = {
  free: { runSecondsDefault: 300, runSecondsMax: 600, vcpuDefault: 1, vcpuMax: 1, memoryMib: 1024, folder: { maxBytes: 256 * MIB, maxEntries: 1000, maxRatio: 50 }, maxOutputFiles: 100 },
  trial: { runSecondsDefault: 600, runSecondsMax: 1800, vcpuDefault: 1, vcpuMax: 2, memoryMib: 2048, folder: { maxBytes: 512 * MIB, maxEntries: 2000, maxRatio: 50 }, maxOutputFiles: 100 },
  growth: { runSecondsDefault: 900, runSecondsMax: 3600, vcpuDefault: 2, vcpuMax: 4, memoryMib: 4096, folder: { maxBytes: 2048 * MIB, maxEntries: 10_000, maxRatio: 100 }, maxOutputFiles: 1000 },
  business: { runSecondsDefault: 900, runSecondsMax: 14_400, vcpuDefault: 2, vcpuMax: 8, memoryMib: 8192, folder: { maxBytes: 4096 * MIB, maxEntries: 50_000, maxRatio: 200 }, maxOutputFiles: 5000 },
}

/** The optional per-plan request fields, as every command endpoint and preset execute accept them. */
export const LimitFields = {
  max_command_run_seconds: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_RUN_SECONDS_CEILING, description: "whole-command wall time in seconds; exceeding it ends the command FAILED with error_status TIMEOUT. Default and maximum by plan (422 above the plan's maximum)" }),
  ),
  vcpu_count: Type.Optional(
    Type.Number({ minimum: MIN_VCPU, maximum: MAX_VCPU_CEILING, description: "CPU cores the command's tools may use (0.1 or more, whole millicores). Default and maximum by plan (422 above the plan's maximum)" }),
  ),
  retention_days: Type.Optional(RetentionDaysField),
}

/** What a request asked for, before the plan's defaults. */
export interface RequestedLimits {
  max_command_run_seconds?: number | undefined
  vcpu_count?: number | undefined
  /** Resolved apart from the others (api/files/retention.ts): it shapes the outputs' records, not the run. */
  retention_days?: number | undefined
}

/** The request's limit fields, if it sent any (a draft keeps them for submission to resolve against the plan). */
export function requestedLimits(body: RequestedLimits): RequestedLimits {
  const requested: RequestedLimits = {}
  if (body.max_command_run_seconds !== undefined) requested.max_command_run_seconds = body.max_command_run_seconds
  if (body.vcpu_count !== undefined) requested.vcpu_count = body.vcpu_count
  if (body.retention_days !== undefined) requested.retention_days = body.retention_days
  return requested
}

/** The limits a command runs with on `plan`; throws 422 naming the field (with `prefix`) when one is above the plan's maximum. */
export function resolveLimits(requested: RequestedLimits | undefined, plan: Plan, limits: CommandLimitsByPlan, prefix = ''): CommandLimits {
  const own = limits[plan]
  const runSeconds = requested?.max_command_run_seconds ?? own.runSecondsDefault
  if (runSeconds > own.runSecondsMax) {
    throw new ValidationError(`${prefix}max_command_run_seconds: at most ${own.runSecondsMax} on the ${plan} plan, got ${runSeconds}`)
  }
  const vcpu = requested?.vcpu_count ?? own.vcpuDefault
  if (vcpu > own.vcpuMax) throw new ValidationError(`${prefix}vcpu_count: at most ${own.vcpuMax} on the ${plan} plan, got ${vcpu}`)
  return { maxRunSeconds: runSeconds, vcpuMillis: Math.round(vcpu * 1000), memoryMib: own.memoryMib, maxOutputFiles: own.maxOutputFiles }
}

/** The folder caps of `plan`, recorded on a command that brings an input_compressed_folder (CommandLimits.folder). */
export function folderLimits(plan: Plan, limits: CommandLimitsByPlan): FolderLimits {
  return { ...limits[plan].folder }
}
