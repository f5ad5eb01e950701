import t from 'tap'
import { commandPercent, parseDurationLine, ProgressReader } from '../../runner-image/runner/run/ffmpeg-progress.js'
import { isManagedStorageUrl } from '../../runner-image/runner/fetch/inputs.js'
import { objectKey } from '../../contracts/object-keys.js'
import { FORMAT_BY_SELECTOR, ytdlpArgs } from '../../runner-image/runner/fetch/ytdlp-args.js'
import { statusEventId } from '../../contracts/status-events.js'

t.test('reads the input duration from ffmpeg stderr', async (t) => {
  t.equal(parseDurationLine('  Duration: 00:01:02.50, start: 0.000000, bitrate: 352 kb/s'), 62.5)
  t.equal(parseDurationLine('  Duration: 01:00:00.00,'), 3600)
  t.equal(parseDurationLine('  Duration: N/A, bitrate: N/A'), null)
  t.equal(parseDurationLine('nothing here'), null)
})

t.test('reads -progress blocks split across chunks', async (t) => {
  const reader = new ProgressReader()
  t.equal(reader.update('frame=10\nout_time_us=1000'), null, 'no block completed yet')
  t.equal(reader.update('000\nout_time=00:00:01.000000\nprogress=continue\n'), 1)
  t.equal(reader.update('out_time_us=1500000\nprogress=end\n'), 1.5)
  t.ok(reader.done)
  t.equal(new ProgressReader().update('out_time_us=N/A\nprogress=continue\n'), 0, 'N/A keeps the last value')
})

t.test('computes the percent of a chain without reaching 100 early', async (t) => {
  t.equal(commandPercent(0, 1, 1, 2), 50)
  t.equal(commandPercent(0, 1, 5, 2), 99, 'capped below 100')
  t.equal(commandPercent(1, 2, 1, 2), 75)
  t.equal(commandPercent(0, 1, 1, null), null)
  t.equal(commandPercent(0, 1, 1, 0), null)
})

t.test('maps every format selector, resolution caps falling back below the cap', async (t) => {
  t.equal(FORMAT_BY_SELECTOR.best, 'bv*+ba/b')
  t.equal(FORMAT_BY_SELECTOR['720p'], 'bv*[height<=?720]+ba/b[height<=?720]/wv*+ba/w')
  t.equal(FORMAT_BY_SELECTOR['2160p'], 'bv*[height<=?2160]+ba/b[height<=?2160]/wv*+ba/w')
  t.equal(FORMAT_BY_SELECTOR.audio_only, 'ba/b')
  t.equal(FORMAT_BY_SELECTOR.worst, 'wv*+wa/w')
})

t.test('builds a fixed yt-dlp argv with the URL after --', async (t) => {
  const args = ytdlpArgs({ url: '--exec=rm -rf /', formatSelector: '360p', outputTemplate: 'inputs/in_a.%(ext)s', maxBytes: 1000, ffmpegPath: '/usr/bin/ffmpeg', jsRuntimePath: '/opt/node/bin/node', socketTimeoutSeconds: 30, proxyUrl: 'http://127.0.0.1:1' })
  t.same(args.slice(-2), ['--', '--exec=rm -rf /'], 'a URL that looks like an option stays a URL')
  for (const flag of ['--ignore-config', '--no-plugin-dirs', '--no-playlist', '--no-exec', '--no-cookies', '--no-cookies-from-browser', '--no-batch-file']) {
    t.ok(args.includes(flag), flag)
  }
  t.equal(args[args.indexOf('--max-filesize') + 1], '1000')
  t.equal(args[args.indexOf('--js-runtimes') + 1], 'node:/opt/node/bin/node', 'YouTube\'s challenges are solved with the given Node')
  t.equal(args[args.indexOf('--output') + 1], 'inputs/in_a.%(ext)s')
  t.equal(args[args.indexOf('--format') + 1], FORMAT_BY_SELECTOR['360p'])
  t.equal(args.indexOf('--'), args.length - 2)
  const merger = args[args.indexOf('--ppa') + 1] ?? ''
  t.match(merger, /^Merger\+ffmpeg_i:-protocol_whitelist file -format_whitelist mov,/, 'the merge step gets the input hardening')
  t.equal(args.filter((arg) => arg === '--ppa').length, 9)
})

t.test('keys objects as {prefix}/{command_id}/{filename}', async (t) => {
  t.equal(objectKey('outputs', 'c1', 'a.mp4'), 'outputs/c1/a.mp4')
  t.equal(objectKey('/team/media/', 'c1', 'a.mp4'), 'team/media/c1/a.mp4')
  t.equal(objectKey('', 'c1', 'a.mp4'), 'c1/a.mp4')
})

t.test('gives a replayed event the same idempotency id', async (t) => {
  t.equal(statusEventId('c1', { type: 'PROCESSING', stage: 'RUNNING', progress: 42.7 }), 'c1:PROCESSING:RUNNING:42')
  t.equal(statusEventId('c1', { type: 'PROCESSING', stage: 'FETCHING', progress: null }), 'c1:PROCESSING:FETCHING:start')
  t.equal(statusEventId('c1', { type: 'FAILED', error_status: 'X', error_message: 'y', ffmpeg_command_run_seconds: null, failed_files: null }), 'c1:FAILED')
})

t.test('reads a managed input unguarded only at the managed bucket on the configured endpoint', async (t) => {
  const pathStyle = { endpoint: 'http://127.0.0.1:9000', bucket: 'ffkube', forcePathStyle: true }
  const hosted = { endpoint: 'https://s3.example.net', bucket: 'ffkube', forcePathStyle: false }
  const cases: Array<[string, string, typeof pathStyle, boolean]> = [
    ['the bucket, path style', 'http://127.0.0.1:9000/ffkube/uploads/a/f/x.mp4?X-Amz-Signature=1', pathStyle, true],
    ['another bucket on the same endpoint', 'http://127.0.0.1:9000/other/uploads/a/f/x.mp4', pathStyle, false],
    ['a bucket whose name starts like ours', 'http://127.0.0.1:9000/ffkube-x/k', pathStyle, false],
    ['the same bucket on another port', 'http://127.0.0.1:9001/ffkube/k', pathStyle, false],
    ['the same bucket under another host name', 'http://localhost:9000/ffkube/k', pathStyle, false],
    ['https instead of http', 'https://127.0.0.1:9000/ffkube/k', pathStyle, false],
    ['credentials in the authority', 'http://x@127.0.0.1:9000/ffkube/k', pathStyle, false],
    ['the bucket, virtual-hosted', 'https://ffkube.s3.example.net/k', hosted, true],
    ['another bucket, virtual-hosted', 'https://other.s3.example.net/k', hosted, false],
    ['a look-alike host, virtual-hosted', 'https://ffkube.s3.example.net.evil.test/k', hosted, false],
    ['not a URL', 'ffkube/k', pathStyle, false],
  ]
  for (const [what, url, storage, expected] of cases) t.equal(isManagedStorageUrl(url, storage), expected, what)
  t.equal(isManagedStorageUrl('https://ffkube.s3.amazonaws.com/k', { endpoint: null, bucket: 'ffkube', forcePathStyle: false }), false, 'AWS S3 (no endpoint) is public: the guard decides')
})
