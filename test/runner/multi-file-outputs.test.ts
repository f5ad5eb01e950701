/**
 * Outputs of many files through the runner, one process running every phase,
 * on real ffmpeg and versitygw: a numbered sequence, HLS, DASH, segment, an HLS
 * ladder, tee; every file stored under {prefix}/{command_id}/ in its relative
 * layout and listed in the SUCCESS event; a pattern that would write 100,000
 * files stopped by the file-count cap with nothing stored; a customer bucket.
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { CommandSpec } from '../../contracts/command-spec.js'
import type { OutputFileResult, StatusEvent } from '../../contracts/status-events.js'
import { makeClip, serveFiles } from '../harness/media.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { runRunner, specOf } from './harness.js'

const PRIVATE_OK = { ALLOW_PRIVATE_NETWORKS: '1' }

/** Every key under `prefix` in the bucket. */
async function listKeys(client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = []
  let token: string | undefined
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }))
    keys.push(...(page.Contents ?? []).map((object) => object.Key as string))
    token = page.NextContinuationToken
  } while (token)
  return keys.sort()
}

function success(t: Test, terminal: StatusEvent): Record<string, OutputFileResult> {
  t.equal(terminal.type, 'SUCCESS', JSON.stringify(terminal))
  return terminal.type === 'SUCCESS' ? terminal.output_files : {}
}

t.test('multi-file outputs through the runner in one process', async (t) => {
  const dir = await scratchDir(t)
  const s3 = await startS3(t)
  const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 3 })
  const server = await serveFiles(t, [clip])
  const client = s3.client()
  t.teardown(() => client.destroy())
  const run = (partial: Partial<CommandSpec>) => runRunner(dir, specOf({ inputFiles: { in_video: server.url(clip) }, ...partial }), s3, PRIVATE_OK)

  /** The output's files are exactly the objects under the command's folder, each key the folder plus its name. */
  async function assertStored(t: Test, commandId: string, out: OutputFileResult, prefix = 'outputs') {
    const files = out.files ?? []
    t.same(await listKeys(client, s3.bucket, `${prefix}/${commandId}/`), files.map((file) => `${prefix}/${commandId}/${file.filename}`).sort(), 'every file is in the bucket, and nothing else')
    t.ok(files.every((file) => file.object_key === `${prefix}/${commandId}/${file.filename}` && file.size_bytes > 0), 'each listed with its key and size')
    const total = files.reduce((sum, file) => sum + file.size_bytes, 0)
    t.equal(out.size_mbytes, Math.round((total / 1048576) * 1e6) / 1e6, 'size_mbytes is the total of every file')
    t.ok(files.some((file) => file.filename === out.filename && file.object_key === out.object_key), 'the main file is one of them')
  }

  t.test('-vf fps=1 thumb_%03d.jpg stores every thumbnail, the first one main', async (t) => {
    const spec = specOf({ inputFiles: { in_video: server.url(clip) }, outputFiles: { out_thumbs: 'thumb_%03d.jpg' }, ffmpegCommands: ['ffmpeg -i {{in_video}} -vf fps=1 {{out_thumbs}}'] })
    const outputs = success(t, (await runRunner(dir, spec, s3, PRIVATE_OK)).terminal)
    const out = outputs.out_thumbs
    if (!out) return t.fail('no out_thumbs')
    t.match(out, { filename: 'thumb_001.jpg', object_key: `outputs/${spec.commandId}/thumb_001.jpg`, file_type: 'image', width: 320 })
    t.ok((out.files ?? []).length >= 3, `${out.files?.length} thumbnails`)
    t.ok((out.files ?? []).every((file) => /^thumb_\d{3}\.jpg$/.test(file.filename) && file.mime_type === 'image/jpeg'))
    await assertStored(t, spec.commandId, out)
  })

  t.test('-f hls with -hls_segment_filename stores the playlist and its segments, the playlist main and probed whole', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_hls: 'playlist.m3u8' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v libx264 -g 25 -c:a aac -f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts {{out_hls}}'],
    })
    const out = success(t, (await run(spec)).terminal).out_hls
    // run() makes its own spec; use the result's key to find the command folder.
    if (!out) return t.fail('no out_hls')
    const commandId = out.object_key.split('/')[1] as string
    t.match(out, { filename: 'playlist.m3u8', mime_type: 'application/vnd.apple.mpegurl', file_format: 'hls' })
    t.ok(out.duration !== null && Math.abs(out.duration - 3) < 0.2, `the playlist probes as the whole stream: ${out.duration} s`)
    const names = (out.files ?? []).map((file) => file.filename)
    t.same(names, ['playlist.m3u8', 'seg_000.ts', 'seg_001.ts', 'seg_002.ts'])
    t.equal(out.files?.find((file) => file.filename === 'seg_000.ts')?.mime_type, 'video/mp2t')
    await assertStored(t, commandId, out)
  })

  t.test('-f dash -seg_duration 1 stores the manifest, init and media segments', async (t) => {
    const out = success(t, (await run({ outputFiles: { out_dash: 'manifest.mpd' }, ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v libx264 -g 25 -f dash -seg_duration 1 {{out_dash}}'] })).terminal).out_dash
    if (!out) return t.fail('no out_dash')
    t.match(out, { filename: 'manifest.mpd', mime_type: 'application/dash+xml' })
    const names = (out.files ?? []).map((file) => file.filename)
    t.ok(names.includes('init-stream0.m4s') && names.some((name) => /^chunk-stream0-\d{5}\.m4s$/.test(name)), names.join(' '))
    await assertStored(t, out.object_key.split('/')[1] as string, out)
  })

  t.test('-f segment -segment_time 1 part_%03d.mp4, named by its filename, stores every part', async (t) => {
    const out = success(t, (await run({ outputFiles: { out_parts: 'part_%03d.mp4' }, ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v libx264 -g 25 -f segment -segment_time 1 -reset_timestamps 1 -segment_list parts.csv part_%03d.mp4'] })).terminal).out_parts
    if (!out) return t.fail('no out_parts')
    const names = (out.files ?? []).map((file) => file.filename)
    t.equal(out.filename, 'part_000.mp4', 'the first part is main')
    t.ok(names.includes('parts.csv') && names.filter((name) => /^part_\d{3}\.mp4$/.test(name)).length >= 3, names.join(' '))
    t.equal(out.file_type, 'video')
    await assertStored(t, out.object_key.split('/')[1] as string, out)
  })

  t.test('an HLS ladder with -var_stream_map and -master_pl_name has the master playlist main', async (t) => {
    const command = "ffmpeg -i {{in_video}} -map 0:v -map 0:a -map 0:v -map 0:a -s:v:0 320x240 -s:v:1 160x120 -c:v libx264 -g 25 -c:a aac -f hls -hls_time 1 -var_stream_map 'v:0,a:0,name:hi v:1,a:1,name:lo' -master_pl_name master.m3u8 -hls_segment_filename seg_%v_%03d.ts {{out_ladder}}"
    const out = success(t, (await run({ outputFiles: { out_ladder: 'stream_%v.m3u8' }, ffmpegCommands: [command] })).terminal).out_ladder
    if (!out) return t.fail('no out_ladder')
    t.equal(out.filename, 'master.m3u8')
    const names = (out.files ?? []).map((file) => file.filename)
    for (const name of ['master.m3u8', 'stream_hi.m3u8', 'stream_lo.m3u8', 'seg_hi_000.ts', 'seg_lo_000.ts']) t.ok(names.includes(name), name)
    t.ok(out.duration !== null && out.duration > 2.5, `the master playlist probes as the stream: ${out.duration} s`)
    await assertStored(t, out.object_key.split('/')[1] as string, out)
  })

  t.test('tee with two work-dir slaves stores a single file and an HLS folder', async (t) => {
    const command = "ffmpeg -i {{in_video}} -map 0 -c:v libx264 -g 25 -c:a aac -f tee '[f=mp4:movflags=+faststart]{{out_video}}|[f=hls:hls_time=1:hls_segment_filename=seg_%03d.ts]{{out_hls}}'"
    const outputs = success(t, (await run({ outputFiles: { out_video: 'full.mp4', out_hls: 'playlist.m3u8' }, ffmpegCommands: [command] })).terminal)
    const commandId = outputs.out_video?.object_key.split('/')[1] as string
    t.match(outputs.out_video, { filename: 'full.mp4', object_key: `outputs/${commandId}/full.mp4`, file_type: 'video' })
    t.notOk(outputs.out_video && 'files' in outputs.out_video, 'a single file lists no files')
    t.match(outputs.out_hls, { filename: 'playlist.m3u8' })
    t.same(await listKeys(client, s3.bucket, `outputs/${commandId}/`), ['full.mp4', 'playlist.m3u8', 'seg_000.ts', 'seg_001.ts', 'seg_002.ts'].map((name) => `outputs/${commandId}/${name}`))
  })

  t.test('hls with delete_segments: the bucket holds exactly the files left at the end, whatever went up while ffmpeg ran', async (t) => {
    // Long enough for files to be stored while ffmpeg still runs (upload/pre-uploads.ts), and for segments to be deleted after.
    const long = await makeClip(join(dir, 'long.mp4'), { seconds: 12, width: 640, height: 360 })
    const longServer = await serveFiles(t, [long])
    const spec = specOf({
      inputFiles: { in_video: longServer.url(long) },
      outputFiles: { out_live: 'live.m3u8' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v libx264 -preset medium -g 25 -c:a aac -f hls -hls_time 1 -hls_list_size 3 -hls_flags delete_segments {{out_live}}'],
    })
    const out = success(t, (await runRunner(dir, spec, s3, PRIVATE_OK)).terminal).out_live
    if (!out) return t.fail('no out_live')
    const names = (out.files ?? []).map((file) => file.filename)
    t.ok(names.length <= 3 + 2 + 1, `only the last segments are left: ${names.join(' ')}`)
    t.notOk(names.includes('live0.ts'), 'the first segment was deleted by ffmpeg')
    await assertStored(t, spec.commandId, out)
  })

  t.test('a pattern that would write 100,000 files ends FAILED OUTPUT_TOO_MANY_FILES with nothing stored', async (t) => {
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_flood: 'f_%06d.bmp' },
      ffmpegCommands: ['ffmpeg -stream_loop -1 -i {{in_video}} -vf fps=20000,scale=8:8 -frames:v 100000 {{out_flood}}'],
      limits: { maxRunSeconds: 300, vcpuMillis: 1000, memoryMib: 1024, maxOutputFiles: 100 },
    })
    const result = await runRunner(dir, spec, s3, PRIVATE_OK)
    t.equal(result.exitCode, 1)
    t.match(result.terminal, { type: 'FAILED', error_status: 'OUTPUT_TOO_MANY_FILES', error_message: /more than 100 files/ })
    t.same(await listKeys(client, s3.bucket, `outputs/${spec.commandId}/`), [], 'nothing in the bucket')
    const written = await readdir(join(dir, `work-${spec.commandId}`, 'outputs', 'out_flood'))
    t.ok(written.length > 100 && written.length < 100_000, `ffmpeg was stopped after ${written.length} files`)
  })

  t.test('a "playlist" whose bytes the user chose is not read with the hls demuxer when it names a file outside its folder', async (t) => {
    // Raw PCM copied byte for byte: the output is exactly this text, an HLS playlist naming a file
    // outside the work dir (the test's clip, which the hls demuxer would read: .mp4 is an allowed segment extension).
    const crafted = join(dir, 'crafted.raw')
    await writeFile(crafted, `#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3,\n${clip}\n#EXT-X-ENDLIST\n`)
    const rawServer = await serveFiles(t, [crafted])
    const spec = specOf({ inputFiles: { in_raw: rawServer.url(crafted) }, outputFiles: { out_evil: 'evil.m3u8' }, ffmpegCommands: ['ffmpeg -f u8 -ar 8000 -ac 1 -i {{in_raw}} -c:a copy -f u8 {{out_evil}}'] })
    const out = success(t, (await runRunner(dir, spec, s3, PRIVATE_OK)).terminal).out_evil
    t.match(out, { filename: 'evil.m3u8', file_format: null, duration: null }, 'probed the ordinary way, which refuses a playlist')
  })

  t.test('a customer bucket gets every file under {prefix}/{command_id}/ in the relative layout', async (t) => {
    const customer = await startS3(t, { server: 'minio' })
    const bucket = await customer.createBucket('multi')
    const credentialsFile = join(dir, 'destination.json')
    await writeFile(credentialsFile, JSON.stringify({ accessKeyId: customer.accessKeyId, secretAccessKey: customer.secretAccessKey }), { mode: 0o600 })
    const spec = specOf({
      inputFiles: { in_video: server.url(clip) },
      outputFiles: { out_hls: 'playlist.m3u8', out_thumbs: 'thumb_%02d.jpg' },
      ffmpegCommands: ['ffmpeg -i {{in_video}} -c:v libx264 -g 25 -an -f hls -hls_time 1 {{out_hls}} -vf fps=1 {{out_thumbs}}'],
      storageDestinationId: `sd_${'2'.repeat(32)}`,
      storageDestination: { id: `sd_${'2'.repeat(32)}`, endpointUrl: customer.endpoint, region: customer.region, bucket, prefix: 'tenant/media', pathStyle: true, publicBaseUrl: null },
    })
    const outputs = success(t, (await runRunner(dir, spec, s3, { ...PRIVATE_OK, FFKUBE_DESTINATION_CREDENTIALS_FILE: credentialsFile })).terminal)
    const customerClient = customer.client()
    t.teardown(() => customerClient.destroy())
    const keys = await listKeys(customerClient, bucket, '')
    const expected = [...(outputs.out_hls?.files ?? []), ...(outputs.out_thumbs?.files ?? [])].map((file) => `tenant/media/${spec.commandId}/${file.filename}`).sort()
    t.ok(expected.includes(`tenant/media/${spec.commandId}/playlist0.ts`), 'hls names its segments after the playlist by default')
    t.same(keys, expected, 'the customer bucket holds every file of both outputs, and nothing else')
    t.match(outputs.out_hls, { storage_location: 'EXTERNAL', bucket, object_key: `tenant/media/${spec.commandId}/playlist.m3u8` })
    t.same(await listKeys(client, s3.bucket, `outputs/${spec.commandId}/`), [], 'nothing of it in managed storage')
  })
})
