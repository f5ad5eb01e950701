import t from 'tap'
import { commandSpecFromMediaCommand, mediaCommandFromSpec } from '../../contracts/media-command.js'
import { commandSpec } from '../operator/fixtures.js'

const destination = {
  id: `sd_${'ab'.repeat(16)}`, endpointUrl: 'https://s3.example.com', region: 'auto', bucket: 'media-out', prefix: 'exports', pathStyle: true, publicBaseUrl: null,
}

t.test('a MediaCommand is named by the command_id, labelled, and carries the spec without its id', async (t) => {
  const spec = commandSpec({ storageDestinationId: destination.id, storageDestination: destination })
  const mc = mediaCommandFromSpec(spec, 'media', 600)
  t.equal(mc.apiVersion, 'ffkube.io/v1alpha1')
  t.equal(mc.kind, 'MediaCommand')
  t.same(mc.metadata, {
    name: spec.commandId, namespace: 'media',
    labels: { 'ffkube.io/account-id': spec.accountId, 'ffkube.io/command-type': 'FFMPEG_COMMAND', 'ffkube.io/command-id': spec.commandId },
  })
  t.same(mc.spec, {
    accountId: spec.accountId, commandType: 'FFMPEG_COMMAND', inputFiles: spec.inputFiles, outputFiles: spec.outputFiles,
    ffmpegCommands: spec.ffmpegCommands, submittedAt: spec.submittedAt, storageDestinationId: spec.storageDestinationId, timeLimitSeconds: 600,
    storageDestination: destination,
  })
  t.notOk(JSON.stringify(mc).includes('secret'), 'no credential field in the CR')
  t.notOk('ytdlp' in mc.spec, 'no ytdlp key for an ffmpeg command (the CRD refuses one)')
})

t.test('the runner gets back exactly the CommandSpec the API built', async (t) => {
  for (const spec of [
    commandSpec({ storageDestination: null }),
    commandSpec({ storageDestination: null, managedInputs: ['in_video'] }),
    commandSpec({ storageDestination: null, compressOutputs: true }),
    commandSpec({ storageDestination: null, compressOutputs: ['out_hls', 'out_thumbs'] }),
    commandSpec({
      storageDestination: null, inputCompressedFolder: 'https://files.example.com/frames.zip', managedCompressedFolder: true,
      limits: { maxRunSeconds: 600, vcpuMillis: 1000, memoryMib: 1024, folder: { maxBytes: 1024, maxEntries: 10, maxRatio: 50 } },
    }),
    commandSpec({ storageDestination: null, limits: { maxRunSeconds: 60, vcpuMillis: 1000, memoryMib: 512, maxOutputFiles: 100 } }),
    commandSpec({ storageDestination: null, limits: { maxRunSeconds: 60, vcpuMillis: 1000, memoryMib: 512 } }),
    commandSpec({ storageDestination: null, storageRoomBytes: 123_456_789_012 }),
    commandSpec({ storageDestination: null, storageRoomBytes: 0 }),
    commandSpec({ storageDestinationId: destination.id, storageDestination: { ...destination, publicBaseUrl: 'https://cdn.example.com/x' } }),
    commandSpec({ commandType: 'CHAINED_COMMAND', ffmpegCommands: ['ffmpeg -i a b', 'ffmpeg -i b c'], storageDestination: null }),
    commandSpec({ commandType: 'YTDLP_COMMAND', ffmpegCommands: [], inputFiles: {}, outputFiles: {}, ytdlp: { inputUrls: { in_a: 'https://v.example.com/1' }, formatSelector: 'audio_only' }, storageDestination: null }),
  ]) {
    t.same(commandSpecFromMediaCommand(mediaCommandFromSpec(spec, 'ns')), spec, spec.commandType)
  }
})

t.test('an account id that is no valid label value is made one', async (t) => {
  const mc = mediaCommandFromSpec(commandSpec({ accountId: `-acc/${'x'.repeat(80)}` }), 'ns')
  const label = mc.metadata.labels!['ffkube.io/account-id']!
  t.ok(label.length <= 63)
  t.match(label, /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/)
  t.equal(mc.spec.accountId, `-acc/${'x'.repeat(80)}`, 'the spec keeps the real id')
})

t.test('fills what a minimal CR leaves out, so the operator can build a Job from it', async (t) => {
  const spec = commandSpecFromMediaCommand({
    apiVersion: 'ffkube.io/v1alpha1', kind: 'MediaCommand',
    metadata: { name: 'x', creationTimestamp: '2026-11-21T00:00:00Z' }, spec: { accountId: 'a', commandType: 'FFMPEG_COMMAND' },
  })
  t.same(spec, { commandId: 'x', accountId: 'a', commandType: 'FFMPEG_COMMAND', inputFiles: {}, outputFiles: {}, ffmpegCommands: [], ytdlp: null, storageDestinationId: null, storageDestination: null, submittedAt: '2026-11-21T00:00:00Z' })
})
