import { accessSync, constants, existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { toolPath, type ToolName } from '../local/tools.js'

/**
 * The binary the service runs for a tool: the variable (FFMPEG_PATH,
 * FFPROBE_PATH, YTDLP_PATH) when set, else the one scripts/provision.sh
 * placed in the cache, else the bare name on PATH (a container image).
 */
export function resolveTool(name: 'ffmpeg' | 'ffprobe' | 'yt-dlp', env: NodeJS.ProcessEnv = process.env): string {
  const variable = { ffmpeg: 'FFMPEG_PATH', ffprobe: 'FFPROBE_PATH', 'yt-dlp': 'YTDLP_PATH' }[name]
  const set = env[variable]
  if (set) return set
  const cached = toolPath(name as ToolName, env)
  return existsSync(cached) ? cached : name
}

/** True when `program` (a path, or a name looked up on PATH) is an executable file. */
export function isExecutable(program: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const candidates = program.includes('/') ? [program] : (env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, program))
  return candidates.some((candidate) => {
    try {
      accessSync(candidate, constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}
