import t from 'tap'
import { fileMembers, managedObjectKeys, megabytes } from '../../api/files/file-document.js'
import type { FileDocument } from '../../api/files/file-document.js'

const base: FileDocument = {
  _id: 'file_1', account_id: 'a', command_id: 'c', output_alias: 'out_hls', filename: 'prog.m3u8', status: 'STORED', service_store_type: 'OUTPUT',
  storage_location: 'INTERNAL', object_key: 'outputs/c/prog.m3u8', storage_url: 'https://s3/playback/c/out_hls/prog.m3u8?sig', external_uri: null, external_object_key: null,
  is_deleted: false, deleted_at: null, expires_at: null, expires_on: null, original_file_url: null, size_mbytes: 3, duration: 2, width: null, height: null, frame_rate: null, bitrate_video_kb: null,
  bitrate_audio_kb: null, sample_rate: null, channels: null, file_type: 'video', file_format: 'hls', codec: 'h264', pixel_format: null, mime_type: 'application/vnd.apple.mpegurl',
  error_status: null, error_message: null, created_at: new Date(0), updated_at: new Date(0),
}
const members = [
  { filename: 'prog.m3u8', object_key: 'outputs/c/prog.m3u8', size_bytes: 100, mime_type: 'application/vnd.apple.mpegurl', storage_url: 'https://s3/prog.m3u8?sig' },
  { filename: 'seg_000.ts', object_key: 'outputs/c/seg_000.ts', size_bytes: 3 * 1024 * 1024, mime_type: 'video/mp2t', storage_url: 'https://s3/seg_000.ts?sig' },
]

t.test('a single file lists itself as its one member', async (t) => {
  const single = { ...base, members: undefined, playback_keys: undefined, filename: 'a.mp4', object_key: 'outputs/c/a.mp4', storage_url: 'https://s3/a.mp4', size_mbytes: 1.5, mime_type: 'video/mp4' }
  t.same(fileMembers(single), { file_count: 1, files: [{ filename: 'a.mp4', storage_url: 'https://s3/a.mp4', size_mbytes: 1.5, mime_type: 'video/mp4', external_object_key: null }] })
  t.same(managedObjectKeys(single), ['outputs/c/a.mp4'])
})

t.test('a multi-file output lists every member with its own URL and size', async (t) => {
  const doc = { ...base, members, playback_keys: ['playback/c/out_hls/prog.m3u8'] }
  t.same(fileMembers(doc), {
    file_count: 2,
    files: [
      { filename: 'prog.m3u8', storage_url: 'https://s3/prog.m3u8?sig', size_mbytes: megabytes(100), mime_type: 'application/vnd.apple.mpegurl', external_object_key: null },
      { filename: 'seg_000.ts', storage_url: 'https://s3/seg_000.ts?sig', size_mbytes: 3, mime_type: 'video/mp2t', external_object_key: null },
    ],
  })
  t.same(managedObjectKeys(doc), ['outputs/c/prog.m3u8', 'outputs/c/seg_000.ts', 'playback/c/out_hls/prog.m3u8'], 'the main file once, every member, the playback copy')
  t.same(fileMembers({ ...doc, is_deleted: true }).files.map((f) => f.storage_url), [null, null], 'a deleted output\'s members have no URL')
})

t.test('an external output names each member\'s key and no managed object', async (t) => {
  const doc = { ...base, storage_location: 'EXTERNAL' as const, object_key: null, external_object_key: 'p/c/prog.m3u8', members: members.map((m) => ({ ...m, object_key: m.object_key.replace('outputs/', 'p/'), storage_url: null })) }
  t.same(fileMembers(doc).files.map((f) => f.external_object_key), ['p/c/prog.m3u8', 'p/c/seg_000.ts'])
  t.same(managedObjectKeys(doc), [], 'never deleted by the service')
})
