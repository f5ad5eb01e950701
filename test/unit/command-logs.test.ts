import t from 'tap'
import { pino } from 'pino'
import type { LogChunk } from '../../contracts/log-chunks.js'
import { foldChunks, logText } from '../../api/logs/log-record.js'
import { logPathRewriter } from '../../runner-image/runner/report/log-paths.js'
import { LogShipper } from '../../runner-image/runner/report/log-shipper.js'

const silent = pino({ level: 'silent' })

t.test('the path rewriter turns our paths into what the client wrote', async (t) => {
  const rewrite = logPathRewriter(['/data/work/c1-1', '/real/data/work/c1-1/'], ['/opt/ffkube/bin/ffmpeg'])
  const cases: Array<[string, string]> = [
    ["Input #0, mov,mp4, from 'inputs/in_video.mp4':", "Input #0, mov,mp4, from 'in_video':"],
    ["Input #0, from '/data/work/c1-1/inputs/in_video.mp4':", "Input #0, from 'in_video':"],
    ["Output #0, mp4, to 'outputs/small.mp4':", "Output #0, mp4, to 'small.mp4':"],
    ['/real/data/work/c1-1/palette.png: No such file', 'palette.png: No such file'],
    ['cwd is /data/work/c1-1 now', 'cwd is . now'],
    ['[download] Destination: inputs/in_talk.f137.mp4', '[download] Destination: in_talk'],
    ['/opt/ffkube/bin/ffmpeg version 5.1', 'ffmpeg version 5.1'],
    ['/data/work/c1-10/inputs/in_x.mp4', '/data/work/c1-10/inputs/in_x.mp4'],
    ['my_inputs/in_x.mp4 stays', 'my_inputs/in_x.mp4 stays'],
  ]
  for (const [input, expected] of cases) t.equal(rewrite(input), expected, input)
})

t.test('folding chunks keeps stream order whatever the arrival order, once each', async (t) => {
  const a = { seq: 1, text: 'a\n', droppedBytes: 0 }
  const b = { seq: 5, text: 'b\n', droppedBytes: 0 }
  const c = { seq: 9, text: 'c\n', droppedBytes: 0 }
  const inOrder = foldChunks(null, [a, b, c])
  const shuffled = foldChunks(foldChunks(null, [c, a]), [b, a])
  t.equal(logText(inOrder), 'a\nb\nc\n')
  t.same(shuffled, inOrder)
  t.equal(foldChunks(inOrder, [b]), null, 'a chunk kept already changes nothing')
})

t.test('folding keeps the last bytes only, says so, and never splits a character', async (t) => {
  const folded = foldChunks(null, [{ seq: 1, text: 'ééé', droppedBytes: 0 }, { seq: 2, text: 'xyz', droppedBytes: 0 }], 6)!
  t.equal(logText(folded), 'éxyz')
  t.equal(folded.truncated, true)
  const later = foldChunks(folded, [{ seq: 3, text: '123', droppedBytes: 0 }], 6)!
  t.equal(logText(later), 'xyz123', 'the oldest part goes whole when it must')
  t.equal(foldChunks(later, [{ seq: 1, text: 'old', droppedBytes: 0 }], 6), null, 'a chunk older than what was cut away stays out')
  const dropped = foldChunks(null, [{ seq: 1, text: 'tail\n', droppedBytes: 42 }])!
  t.match(logText(dropped), /^\[42 bytes of log dropped here/)
  t.equal(dropped.truncated, true)
})

t.test('the log shipper labels steps, rewrites whole lines, and sends in order', async (t) => {
  const sent: LogChunk[] = []
  const shipper = new LogShipper('c1', async (chunk) => void sent.push(chunk), (text) => text.replaceAll('/w/', ''), silent, 60_000)
  shipper.step('ffmpeg')
  shipper.write('from /w')
  shipper.write('/inputs/x\nsecond line without end')
  await shipper.flush()
  t.equal(sent.map((c) => c.text).join(''), '==> ffmpeg\nfrom inputs/x\nsecond line without end\n', 'a path split across writes is still rewritten')
  shipper.write('more\n')
  await shipper.flush()
  t.same(sent.map((c) => c.seq), [1, 2])
  t.ok(sent.every((c) => c.command_id === 'c1' && c.source === sent[0]!.source))
})

t.test('the log shipper keeps only the newest 256 KiB while a chunk is in flight, and says how much it dropped', async (t) => {
  const sent: LogChunk[] = []
  let release: () => void = () => undefined
  const held = new Promise<void>((resolve) => (release = resolve))
  const shipper = new LogShipper('c1', async (chunk) => {
    sent.push(chunk)
    if (sent.length === 1) await held
  }, (text) => text, silent, 60_000)
  shipper.write('first\n')
  const flushed = shipper.flush()
  const line = `${'x'.repeat(1023)}\n`
  for (let i = 0; i < 300; i++) shipper.write(line)
  release()
  await flushed
  await shipper.flush()
  t.equal(sent.length, 2, 'one chunk in flight, the rest gathered into the next')
  t.ok(Buffer.byteLength(sent[1]!.text) <= 256 * 1024)
  t.equal(sent[1]!.dropped_bytes, 300 * 1024 - 256 * 1024)
})

t.test('a shipper without a sink keeps nothing', async (t) => {
  const shipper = new LogShipper('c1', null, (text) => text, silent)
  shipper.write('x\n')
  await shipper.flush()
  t.pass('flush resolves')
})
