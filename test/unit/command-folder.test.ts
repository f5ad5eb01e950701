import t from 'tap'
import type { StorageDestinationSpec } from '../../contracts/command-spec.js'
import type { OutputFileResult, SuccessEvent } from '../../contracts/status-events.js'
import { commandFolder, misplacedOutput, OUTPUT_OUTSIDE_COMMAND_FOLDER } from '../../contracts/command-folder.js'
import { refusedAsMisplaced } from '../../api/projector/projection.js'

const A = '0b7c3a52-1d4e-4f60-9a8b-2c3d4e5f6a7b'
const B = '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a'
const MANAGED = 'ffkube-managed'
const DESTINATION: StorageDestinationSpec = {
  id: `sd_${'d'.repeat(32)}`, endpointUrl: 'https://s3.example.com', region: 'auto', bucket: 'media', prefix: 'tenant-a', pathStyle: true, publicBaseUrl: null,
}

const NO_MEDIA = {
  size_mbytes: 1, duration: null, width: null, height: null, frame_rate: null, bitrate_video_kb: null, bitrate_audio_kb: null, sample_rate: null, channels: null,
  file_type: null, file_format: null, codec: null, pixel_format: null, mime_type: null,
}

const managed = commandFolder(A, null, MANAGED)
const external = commandFolder(A, DESTINATION, MANAGED)

/** An output as the runner reports it: its filename is the key's part after `{prefix}/{command_id}/`. */
function single(key: unknown, where: { bucket?: unknown; storage_location?: unknown; filename?: unknown } = {}): Record<string, unknown> {
  const filename = typeof key === 'string' ? key.split('/').slice(2).join('/') : 'x.mp4'
  return { ...NO_MEDIA, filename, storage_location: 'INTERNAL', bucket: MANAGED, object_key: key, ...where }
}

t.test("a command's folder is outputs/<id>/ in the configured managed bucket, or {prefix}/<id>/ in its destination's bucket", async (t) => {
  t.same(managed, { location: 'INTERNAL', bucket: MANAGED, folder: `outputs/${A}/` })
  t.same(external, { location: 'EXTERNAL', bucket: 'media', folder: `tenant-a/${A}/` })
  t.same(commandFolder(A, { ...DESTINATION, prefix: '' }, MANAGED).folder, `${A}/`, "a destination at the bucket's root")
  t.same(commandFolder(A, { ...DESTINATION, prefix: 'a/b' }, MANAGED).folder, `a/b/${A}/`)
})

t.test("accepts every output and member the runner would store in the command's own folder", async (t) => {
  const accepted: Array<[string, unknown, typeof managed]> = [
    ['a single file', { out_v: single(`outputs/${A}/video.mp4`) }, managed],
    ['a nested member path', { out_hls: { ...single(`outputs/${A}/v0/prog.m3u8`), files: [
      { filename: 'master.m3u8', object_key: `outputs/${A}/master.m3u8`, size_bytes: 1, mime_type: null },
      { filename: 'v0/seg_000.ts', object_key: `outputs/${A}/v0/seg_000.ts`, size_bytes: 1, mime_type: null },
    ] } }, managed],
    ['a literal percent sign that escapes nothing', { out_v: single(`outputs/${A}/seg%_001.ts`) }, managed],
    ['dots inside a name', { out_v: single(`outputs/${A}/a..b.mp4`) }, managed],
    ['several outputs', { out_a: single(`outputs/${A}/a.mp4`), out_b: single(`outputs/${A}/b.mp4`) }, managed],
    ['no outputs', {}, managed],
    ["a destination's output", { out_v: single(`tenant-a/${A}/out.mp4`, { bucket: 'media', storage_location: 'EXTERNAL' }) }, external],
  ]
  for (const [what, outputs, folder] of accepted) t.equal(misplacedOutput(outputs, folder), null, what)
})

t.test('refuses a key outside the folder, or one a lenient reader would take out of it, naming the output and the key', async (t) => {
  const refused: Array<[string, string, RegExp]> = [
    ["another command's output", `outputs/${B}/video.mp4`, /not under the command's folder/],
    ['a key of another command whose id starts like this one', `outputs/${A}x/video.mp4`, /not under/],
    ["the folder's name without its slash", `outputs/${A}`, /not under/],
    ['the folder itself', `outputs/${A}/`, /names the folder itself/],
    ['an upload of the managed bucket', 'uploads/acc_1/file.mp4', /not under/],
    ["the API's own playback copy", `playback/${A}/out_hls/master.m3u8`, /not under/],
    ['an absolute key', `/outputs/${A}/x.mp4`, /not under/],
    ['another case', `OUTPUTS/${A}/x.mp4`, /not under/],
    ['a parent segment', `outputs/${A}/../${B}/video.mp4`, /'\.\.' part/],
    ['a current segment', `outputs/${A}/./x.mp4`, /'\.\.' part/],
    ['an empty segment', `outputs/${A}//x.mp4`, /empty/],
    ['a trailing slash', `outputs/${A}/dir/`, /empty/],
    ['percent-encoded dots', `outputs/${A}/%2e%2E/${B}/video.mp4`, /'\.\.' part/],
    ['doubly encoded dots', `outputs/${A}/%252e%252e/${B}/video.mp4`, /'\.\.' part/],
    ['an encoded slash', `outputs/${A}/..%2f${B}%2fvideo.mp4`, /encoded separator/],
    ['an encoded slash beside an invalid escape', `outputs/${A}/%zz..%2F${B}`, /encoded separator/],
    ['an encoded backslash', `outputs/${A}/..%5c${B}`, /encoded separator/],
    ['a backslash', `outputs/${A}/..\\${B}\\video.mp4`, /backslash/],
    ['fullwidth dots', `outputs/${A}/\uff0e\uff0e/${B}/video.mp4`, /'\.\.' part/],
    ['a fullwidth solidus', `outputs/${A}/..\uff0f${B}`, /encoded separator/],
    ['a NUL', `outputs/${A}/x.mp4\u0000`, /control character/],
    ['a newline', `outputs/${A}/x\n.mp4`, /control character/],
  ]
  for (const [what, key, reason] of refused) {
    t.match(misplacedOutput({ out_v: single(key) }, managed), { alias: 'out_v', objectKey: key, bucket: MANAGED, reason }, what)
  }
})

t.test("refuses an output in another bucket or kind of storage than the command's", async (t) => {
  const key = `outputs/${A}/x.mp4`
  t.match(misplacedOutput({ out_v: single(key, { bucket: 'other-tenant' }) }, managed), { alias: 'out_v', bucket: 'other-tenant', reason: /another bucket/ }, 'another bucket')
  t.match(misplacedOutput({ out_v: single(key, { storage_location: 'EXTERNAL' }) }, managed), { reason: /not in managed storage/ }, 'EXTERNAL for a managed command')
  t.match(misplacedOutput({ out_v: single(`tenant-a/${A}/x.mp4`) }, external), { reason: /not in the command's storage destination/ }, 'INTERNAL for a destination command')
  t.match(misplacedOutput({ out_v: single(`tenant-a/${A}/x.mp4`, { bucket: MANAGED, storage_location: 'EXTERNAL' }) }, external), { reason: /another bucket/ }, "the managed bucket named as a destination's")
  t.match(misplacedOutput({ out_v: single(`tenant-b/${A}/x.mp4`, { bucket: 'media', storage_location: 'EXTERNAL' }) }, external), { reason: /not under the command's folder$/ }, "another prefix of the destination's bucket")
  t.match(misplacedOutput({ out_v: single(`tenant-a/${B}/x.mp4`, { bucket: 'media', storage_location: 'EXTERNAL' }) }, external), { reason: /not under/ }, "another command's folder of the destination")
  t.match(misplacedOutput({ out_v: single(key, { storage_location: 'ELSEWHERE' }) }, managed), { reason: /not in managed storage/ }, 'an unknown storage_location')
})

t.test('refuses a multi-file output if any member is outside the folder, even when its main file is inside', async (t) => {
  const members = [
    { filename: 'index.m3u8', object_key: `outputs/${A}/index.m3u8`, size_bytes: 1, mime_type: null },
    { filename: 'seg_000.ts', object_key: `outputs/${B}/seg_000.ts`, size_bytes: 1, mime_type: null },
  ]
  t.match(misplacedOutput({ out_hls: { ...single(`outputs/${A}/index.m3u8`), files: members } }, managed), { alias: 'out_hls', objectKey: `outputs/${B}/seg_000.ts` })
  t.match(misplacedOutput({ out_hls: { ...single(`outputs/${A}/index.m3u8`), files: 'outputs/x' } }, managed), { reason: /files are not a list/ })
  t.match(misplacedOutput({ out_hls: { ...single(`outputs/${A}/index.m3u8`), files: [null] } }, managed), { reason: /not a string/ })
  t.match(misplacedOutput({ out_hls: { ...single(`outputs/${A}/index.m3u8`), files: [{ object_key: 7 }] } }, managed), { reason: /not a string/ })
})

t.test('refuses a key that is not its own filename in the folder: the API names playback copies after filenames', async (t) => {
  const member = (filename: unknown, key: string) => ({ filename, object_key: key, size_bytes: 1, mime_type: null })
  const main = single(`outputs/${A}/index.m3u8`)
  const cases: Array<[string, unknown]> = [
    ["a member's filename climbing out of the playback folder", [member(`../../../playback/${B}/out_hls/index.m3u8`, `outputs/${A}/index.m3u8`)]],
    ["a member's filename naming another of the folder's files", [member('other.ts', `outputs/${A}/seg_000.ts`)]],
    ['a member without a filename', [member(undefined, `outputs/${A}/seg_000.ts`)]],
    ['a member whose filename is a number', [member(0, `outputs/${A}/0`)]],
  ]
  for (const [what, files] of cases) t.match(misplacedOutput({ out_hls: { ...main, files } }, managed), { alias: 'out_hls', reason: /not its filename/ }, what)
  t.match(misplacedOutput({ out_v: single(`outputs/${A}/x.mp4`, { filename: 'y.mp4' }) }, managed), { reason: /not its filename/ }, "a single file's filename")
  t.match(misplacedOutput({ out_v: single(`outputs/${A}/x.mp4`, { filename: `../${A}/x.mp4` }) }, managed), { reason: /not its filename/ }, 'a filename that only resolves to the key')
})

t.test('refuses a result whose shape is not a runner\'s, without throwing', async (t) => {
  t.match(misplacedOutput(null, managed), { reason: /output_files is not an object/ })
  t.match(misplacedOutput([single(`outputs/${A}/x.mp4`)], managed), { reason: /output_files is not an object/ })
  t.match(misplacedOutput({ out_v: 'outputs/x' }, managed), { alias: 'out_v', reason: /result is not an object/ })
  t.match(misplacedOutput({ out_v: single(undefined) }, managed), { reason: /not a string/ })
  t.match(misplacedOutput({ out_v: single(42) }, managed), { reason: /not a string/ })
})

t.test("the FAILED a misplaced SUCCESS becomes names the output and the command's folder, never the reported key, and keeps nothing of the event", async (t) => {
  const forged = single(`outputs/${B}/secret.mp4`) as unknown as OutputFileResult
  const success: SuccessEvent = {
    type: 'SUCCESS', command_id: A, event_id: `${A}:SUCCESS`, emitted_at: '2026-11-28T08:00:00.000Z',
    output_files: { out_v: forged }, ffmpeg_command_run_seconds: 2.5, failed_files: { in_x: { url: 'https://evil.example/', error_status: 'X', error_message: 'look here' } },
  }
  const failed = refusedAsMisplaced(success, misplacedOutput(success.output_files, managed)!, managed)
  t.match(failed, { type: 'FAILED', command_id: A, error_status: OUTPUT_OUTSIDE_COMMAND_FOLDER, ffmpeg_command_run_seconds: null, failed_files: null })
  t.equal(failed.error_message, `output out_v: its object key is not under the command's folder; a runner may report only objects under outputs/${A}/ in the command's bucket, so its result was refused and none of its outputs recorded`)
  t.notMatch(failed.error_message, B, "the other command's id is not shown")
  const odd = refusedAsMisplaced(success, { alias: 'out_v; your account is closed', bucket: null, objectKey: null, reason: 'its result is not an object' }, managed)
  t.match(odd.error_message, /^an output: its result is not an object;/, 'an alias that does not read as one is not echoed')
})
