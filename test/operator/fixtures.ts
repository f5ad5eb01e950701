/** Shared builders for the operator's tests: a MediaCommand as the apiserver would return it, and a Job config. */
import { randomUUID } from 'node:crypto'
import type { CommandSpec } from '../../contracts/command-spec.js'
import { mediaCommandFromSpec, type MediaCommand } from '../../contracts/media-command.js'
import type { JobConfig } from '../../operator/config.js'

export function commandSpec(overrides: Partial<CommandSpec> = {}): CommandSpec {
  return {
    commandId: randomUUID(),
    accountId: 'acc_0123456789abcdef',
    commandType: 'FFMPEG_COMMAND',
    inputFiles: { in_video: 'https://example.com/a.mp4' },
    outputFiles: { out_thumb: 'thumb.jpg' },
    ffmpegCommands: ['ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}'],
    ytdlp: null,
    storageDestinationId: null,
    submittedAt: '2026-11-21T20:00:00.000Z',
    ...overrides,
  }
}

/** A MediaCommand with the fields the apiserver fills in (uid, generation, creationTimestamp). */
export function storedMediaCommand(spec: CommandSpec = commandSpec(), namespace = 'ffkube'): MediaCommand {
  const mc = mediaCommandFromSpec(spec, namespace)
  mc.metadata.uid = '11111111-2222-3333-4444-555555555555'
  mc.metadata.generation = 1
  mc.metadata.resourceVersion = '42'
  mc.metadata.creationTimestamp = '2026-11-21T20:00:01Z'
  return mc
}

export const jobConfig: JobConfig = {
  runnerImage: 'registry.example.com/ffkube/runner:1.2.3',
  imagePullPolicy: 'IfNotPresent',
  runnerCommand: ['node', '/app/runner.js'],
  runAsUser: 65532,
  resources: {
    cpuRequest: '250m', cpuLimit: '2', memoryRequest: '256Mi', memoryLimit: '1Gi',
    ephemeralStorageRequest: '1Gi', ephemeralStorageLimit: '5Gi',
  },
  workDirSizeLimit: '4Gi',
  deadlineSeconds: 1800,
  ttlSecondsAfterFinished: 600,
  uploadSecretName: 'ffkube-storage',
  uploadSecretKey: 'credentials.json',
  runnerEnv: { S3_BUCKET: 'media', S3_ENDPOINT: 'https://s3.example.com' },
  runtimeClassName: undefined,
  nodeSelector: undefined,
  tolerations: undefined,
  natsUrl: 'nats://nats.ffkube:4222',
  serviceAccountName: undefined,
}
