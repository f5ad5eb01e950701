/**
 * The one-shot runner (main.ts, as a Job's container or a local child
 * process) with a storage destination: the spec names the bucket, the
 * credentials come from the file FFKUBE_DESTINATION_CREDENTIALS_FILE names.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
import t from 'tap'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runRunner, specOf } from '../runner/harness.js'

t.test('the runner uploads to the destination with the credentials file and reports EXTERNAL outputs', async (t) => {
  const dir = await scratchDir(t)
  const [managed, customer, clip] = await Promise.all([startS3(t), startS3(t, { server: 'minio' }), makeClip(join(dir, 'clip.mp4'), { seconds: 1 })])
  const bucket = await customer.createBucket('one-shot')
  const media = await serveFiles(t, [clip])
  const credentialsFile = join(dir, 'destination.json')
  await writeFile(credentialsFile, JSON.stringify({ accessKeyId: customer.accessKeyId, secretAccessKey: customer.secretAccessKey }), { mode: 0o600 })
  const spec = specOf({
    inputFiles: { in_a: media.url(clip) },
    outputFiles: { out_b: 'frame.jpg' },
    ffmpegCommands: ['ffmpeg -i {{in_a}} -frames:v 1 {{out_b}}'],
    storageDestinationId: `sd_${'1'.repeat(32)}`,
    storageDestination: {
      id: `sd_${'1'.repeat(32)}`,
      endpointUrl: customer.endpoint.replace('127.0.0.1', 'localhost'),
      region: customer.region,
      bucket,
      prefix: 'frames',
      pathStyle: true,
      publicBaseUrl: null,
    },
  })
  const run = await runRunner(dir, spec, managed, { ALLOW_PRIVATE_NETWORKS: '1', FFKUBE_DESTINATION_CREDENTIALS_FILE: credentialsFile })
  t.equal(run.exitCode, 0, run.raw)
  t.match(run.terminal, {
    type: 'SUCCESS',
    output_files: { out_b: { filename: 'frame.jpg', storage_location: 'EXTERNAL', bucket, object_key: `frames/${spec.commandId}/frame.jpg`, width: 320 } },
  })
  const client = customer.client()
  t.teardown(() => client.destroy())
  const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: `frames/${spec.commandId}/frame.jpg` }))
  t.equal(head.ContentType, 'image/jpeg')
  const managedClient = managed.client()
  t.teardown(() => managedClient.destroy())
  const inManaged = await managedClient.send(new ListObjectsV2Command({ Bucket: managed.bucket }))
  t.equal(inManaged.KeyCount ?? 0, 0, 'nothing in managed storage')
  t.notOk(run.raw.includes(customer.secretAccessKey), 'no secret in the status events')
})
