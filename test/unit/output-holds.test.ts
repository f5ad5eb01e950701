import t from 'tap'
import type { OutputFileResult } from '../../contracts/status-events.js'
import { outputFileId, outputHolds, outputObjectKeys } from '../../api/files/output-files.js'
import { refusedForQuota } from '../../api/projector/projection.js'

const NO_MEDIA = {
  duration: null, width: null, height: null, frame_rate: null, bitrate_video_kb: null, bitrate_audio_kb: null, sample_rate: null, channels: null,
  file_type: null, file_format: null, codec: null, pixel_format: null, mime_type: null,
}

function single(key: string, sizeMbytes: number, location: 'INTERNAL' | 'EXTERNAL' = 'INTERNAL'): OutputFileResult {
  return { ...NO_MEDIA, size_mbytes: sizeMbytes, filename: key.split('/').pop()!, storage_location: location, bucket: 'b', object_key: key }
}

const results: Record<string, OutputFileResult> = {
  // 1.5 MiB as the runner rounds it: 1572864 bytes.
  out_video: single('outputs/c1/video.mp4', 1.5),
  out_hls: {
    ...single('outputs/c1/hls/index.m3u8', 0.000999),
    files: [
      { filename: 'hls/index.m3u8', object_key: 'outputs/c1/hls/index.m3u8', size_bytes: 210, mime_type: null },
      { filename: 'hls/seg_000.ts', object_key: 'outputs/c1/hls/seg_000.ts', size_bytes: 600, mime_type: null },
      { filename: 'hls/seg_001.ts', object_key: 'outputs/c1/hls/seg_001.ts', size_bytes: 237, mime_type: null },
    ],
  },
  out_customer: single('prefix/c1/customer.mp4', 50, 'EXTERNAL'),
}

t.test("a command's managed outputs are held by their file ids with their bytes; a customer's bucket is not counted", async (t) => {
  t.same(outputHolds('c1', results), [
    { id: outputFileId('c1', 'out_video'), bytes: 1572864 },
    { id: outputFileId('c1', 'out_hls'), bytes: 210 + 600 + 237 },
  ])
  t.same(outputHolds('c1', { out_customer: results.out_customer! }), [], 'only external outputs: nothing to hold')
})

t.test('refused outputs are discarded object by object: every member of a multi-file output, never a customer object', async (t) => {
  t.same(outputObjectKeys(results), ['outputs/c1/video.mp4', 'outputs/c1/hls/index.m3u8', 'outputs/c1/hls/seg_000.ts', 'outputs/c1/hls/seg_001.ts'])
})

t.test('a SUCCESS refused by the quota becomes a FAILED of the same command with its run seconds and the refusal', async (t) => {
  const success = {
    type: 'SUCCESS' as const, command_id: 'c1', event_id: 'c1:SUCCESS', emitted_at: '2026-11-27T10:00:00.000Z',
    output_files: results, ffmpeg_command_run_seconds: 2.5, failed_files: null,
  }
  t.same(refusedForQuota(success, 'the outputs hold 3 MiB'), {
    type: 'FAILED', command_id: 'c1', event_id: 'c1:SUCCESS', emitted_at: '2026-11-27T10:00:00.000Z',
    error_status: 'STORAGE_QUOTA_EXCEEDED', error_message: 'the outputs hold 3 MiB; none of the outputs was kept',
    ffmpeg_command_run_seconds: 2.5, failed_files: null,
  })
})
