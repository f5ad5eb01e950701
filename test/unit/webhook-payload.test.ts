import { createHmac } from 'node:crypto'
import t from 'tap'
import Fastify from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { CommandPollResponse, stringifyPollResponse } from '../../api/commands/schemas.js'
import { buildWebhookRequest } from '../../api/webhooks/webhook-request.js'

const file = {
  bitrate_audio_kb: null,
  status: 'STORED',
  file_id: 'file_1',
  filename: 'a "quoted" ünïcode\u2028name.mp4',
  storage_url: 'https://s.example.com/a.mp4',
  storage_location: 'INTERNAL',
  external_uri: null,
  external_object_key: null,
  service_store_type: 'OUTPUT',
  is_deleted: false,
  size_mbytes: 0.1 + 0.2,
  duration: 1e21,
  file_type: 'video',
  file_format: 'mp4',
  codec: 'h264',
  pixel_format: null,
  mime_type: 'video/mp4',
  width: 640,
  height: 360,
  frame_rate: -0,
  bitrate_video_kb: 12.5,
  not_in_schema: 'dropped',
  // Members out of the schema's order too, and with a field it does not declare.
  files: [
    { mime_type: 'video/mp4', size_mbytes: 0.3, filename: 'a "quoted" ünïcode\u2028name.mp4', external_object_key: null, storage_url: 'https://s.example.com/a.mp4', extra: 1 },
  ],
  file_count: 1,
}

const polls: Record<string, unknown>[] = [
  {
    original_request: { output_files: { out_a: 'a.mp4' }, input_files: { in_b: 'https://x/b', in_a: 'https://x/a' }, ffmpeg_commands: ['ffmpeg -i x y', 'ffmpeg -i y z'] },
    command_id: 'c1',
    status: 'SUCCESS',
    command_type: 'CHAINED_COMMAND',
    total_processing_seconds: 12.25,
    ffmpeg_command_run_seconds: null,
    metadata: { z: 1, a: 'two', m: false, '': 'empty key', 'ü': '\u0000\u001f' },
    error_status: null,
    error_message: null,
    output_files: { out_b: file, out_a: { ...file, file_id: 'file_2' } },
    failed_files: { in_x: { error_message: 'gone', url: 'https://x/x', error_status: 'SOURCE_NOT_FOUND' } },
    internal_field: 'dropped',
    processing_stage: null,
    progress: 100,
  },
  {
    command_id: 'c2',
    status: 'FAILED',
    command_type: 'YTDLP_COMMAND',
    total_processing_seconds: 3,
    ffmpeg_command_run_seconds: 0,
    metadata: null,
    error_status: 'SOURCE_LOGIN_REQUIRED',
    error_message: 'line\nbreak \\ and \ud83c\udfac',
    original_request: { input_files: { in_v: 'https://v' }, output_files: {} },
    progress: null,
    processing_stage: null,
  },
]

t.test('the webhook data is the text Fastify sends for the poll response', async (t) => {
  const app = Fastify().withTypeProvider<TypeBoxTypeProvider>()
  let current: unknown = null
  app.get('/poll', { schema: { response: { 200: CommandPollResponse } } }, async () => current as never)
  t.teardown(() => app.close())
  for (const poll of polls) {
    current = poll
    const viaFastify = (await app.inject({ method: 'GET', url: '/poll' })).body
    t.equal(stringifyPollResponse(poll as never), viaFastify, String(poll.command_id))
  }
})

t.test('the body wraps that text and the signature covers the exact bytes', async (t) => {
  const request = buildWebhookRequest({ poll: polls[1] as never, timestampMs: 1_700_000_000_123, deliveryId: 'whd_c2', attempt: 3, secret: 's3cret' })
  t.equal(request.body, `{"data":${stringifyPollResponse(polls[1] as never)},"timestamp":1700000000123}`)
  t.equal(request.headers['X-Webhook-Signature'], createHmac('sha256', 's3cret').update(request.body).digest('hex'), 'an HMAC written here, over the body as sent')
  t.match(request.headers, { 'Content-Type': 'application/json', 'User-Agent': 'ffkube-Webhook/1.0', 'X-Webhook-Id': 'whd_c2', 'X-Webhook-Timestamp': '1700000000123', 'X-Webhook-Attempt': '3' })
  const unsigned = buildWebhookRequest({ poll: polls[1] as never, timestampMs: 1, deliveryId: 'd', attempt: 1, secret: null })
  t.notOk('X-Webhook-Signature' in unsigned.headers)
})
