/**
 * The provisioned ffmpeg (scripts/ffmpeg/build-ffmpeg.sh) against what ffkube
 * promises of it: the pinned version, every filter, muxer and demuxer the
 * policy allows, the codecs a media API's users expect, and no protocol the
 * policy has not reviewed (contracts/ffmpeg-protocols.ts). The lists are read
 * from the binary, so the allow-lists and the build cannot drift apart.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { toolPath } from '../../api/local/tools.js'
import { ALLOWED_FILTERS } from '../../contracts/ffmpeg-filters.js'
import { ALLOWED_DEMUXERS, ALLOWED_MUXERS } from '../../contracts/ffmpeg-formats.js'
import { DASH_DEMUXERS, HLS_DEMUXERS } from '../../contracts/ffmpeg-inputs.js'
import { INPUT_HARDENING } from '../../contracts/ffmpeg-policy.js'
import { REVIEWED_PROTOCOLS } from '../../contracts/ffmpeg-protocols.js'
import { checkoutPath } from '../harness/checkout.js'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'

const run = promisify(execFile)
const ffmpeg = toolPath('ffmpeg')
const ffprobe = toolPath('ffprobe')

/** The encoders and decoders users of a media API expect (README, "What a command string may do"). */
const EXPECTED_ENCODERS = [
  'libx264', 'libx265', 'libvpx', 'libvpx-vp9', 'libaom-av1', 'libtheora', 'aac', 'libopus', 'libvorbis', 'libmp3lame', 'flac',
  'png', 'apng', 'mjpeg', 'libwebp', 'gif', 'pcm_s16le', 'subrip', 'webvtt', 'ass',
]
const EXPECTED_DECODERS = [
  'h264', 'hevc', 'vp8', 'vp9', 'libdav1d', 'theora', 'aac', 'opus', 'vorbis', 'mp3', 'flac',
  'png', 'apng', 'mjpeg', 'webp', 'gif', 'pcm_s16le', 'subrip', 'webvtt', 'ass',
]

async function listing(flag: string): Promise<string> {
  return (await run(ffmpeg, ['-hide_banner', flag], { maxBuffer: 16 << 20 })).stdout
}

/** The names of a listing's entries: `pattern`'s first group on each line, split at commas (`mov,mp4,m4a,…`). */
function names(text: string, pattern: RegExp): Set<string> {
  return new Set([...text.matchAll(pattern)].flatMap((match) => (match[1] as string).split(',')))
}

// ` TS scale             V->V       Scale the input video size…` (fftools/opt_common.c, show_filters)
const FILTER_LINE = /^ [T.][S.] (\S+) +\S*->\S* /gm
// ` V....D libx264              libx264 H.264 …` (show_encoders / show_decoders)
const CODEC_LINE = /^ [A-Z.][F.][S.][X.][B.][D.] (\S+) /gm
// ` DEd mov,mp4,m4a,3gp,3g2,mj2 QuickTime / MOV` (show_formats_devices)
const FORMAT_LINE = /^ [D ][E ][d ] (\S+) /gm

t.test('ffmpeg and ffprobe are the version scripts/ffmpeg/build-ffmpeg.sh pins, not a system build', async (t) => {
  const script = await readFile(checkoutPath('scripts', 'ffmpeg', 'build-ffmpeg.sh'), 'utf8')
  const pinned = /^FFMPEG_VERSION=(\S+)$/m.exec(script)?.[1]
  t.ok(pinned, 'the script pins a version')
  for (const program of [ffmpeg, ffprobe]) {
    const { stdout } = await run(program, ['-hide_banner', '-version'])
    t.match(stdout, new RegExp(`^ff(mpeg|probe) version ${pinned!.replace(/\./g, '\\.')} `), `${program} is FFmpeg ${pinned}`)
    t.match(stdout, /--disable-network/, 'configured by the script')
    const { stdout: linked } = await run('ldd', [program])
    t.notMatch(linked, /libav(codec|format|filter)/, 'FFmpeg itself is linked in, not a system libavcodec')
    t.notMatch(linked, /lib(xml2|icu)/, 'libxml2 is linked in, and without ICU')
  }
})

t.test('every filter the policy allows is in the binary', async (t) => {
  const filters = names(await listing('-filters'), FILTER_LINE)
  t.ok(filters.has('scale') && filters.has('testsrc2'), `the listing parsed (${filters.size} filters)`)
  const missing = [...ALLOWED_FILTERS.keys()].filter((name) => !filters.has(name))
  t.same(missing, [], 'contracts/ffmpeg-filters.ts names no filter the build lacks')
})

// ` ... testsrc2          |->V       Generate another test pattern.`: a source has no inputs.
const FILTER_IO_LINE = /^ [T.][S.] (\S+) +(\S*)->(\S*) /gm
// What ffmpeg wires into every graph by itself; no command names them.
const GRAPH_ENDS = new Set(['buffer', 'abuffer', 'buffersink', 'abuffersink'])

t.test('the binary holds no filter or demuxer the policy refuses: what is not built cannot be reached', async (t) => {
  const filters = [...(await listing('-filters')).matchAll(FILTER_IO_LINE)].map(([, name, inputs]) => ({ name: name as string, source: inputs === '|' }))
  t.ok(filters.some(({ name, source }) => name === 'testsrc2' && source), 'the listing parsed, sources told apart')
  // Sources (test patterns, sine) read nothing: the tests make their clips with them through lavfi, which the policy refuses in a command.
  const unreviewed = filters.filter(({ name, source }) => !source && !GRAPH_ENDS.has(name) && !ALLOWED_FILTERS.has(name)).map(({ name }) => name)
  t.same(unreviewed, [], 'every filter with an input is one contracts/ffmpeg-filters.ts allows')
  for (const refused of ['zmq', 'azmq', 'sendcmd', 'asendcmd', 'metadata', 'signature', 'psnr']) {
    t.notOk(filters.some(({ name }) => name === refused), `${refused} is not built`)
  }
  // A demuxer entry is reachable when any of its names is on a -format_whitelist the runner passes (as ffmpeg matches it).
  const reachable = new Set([...ALLOWED_DEMUXERS, ...HLS_DEMUXERS.split(','), ...DASH_DEMUXERS.split(','), 'concat'])
  // ` D d lavfi …`: input devices are listed too; lavfi is the one the build keeps (the tests' clips; the policy refuses it).
  const listed = [...(await listing('-demuxers')).matchAll(/^ [D ][E ]([d ]) (\S+) /gm)].map(([, device, names]) => ({ device: device === 'd', names: (names as string).split(',') }))
  t.same(listed.filter(({ device }) => device).map(({ names }) => names.join(',')), ['lavfi'], 'the one input device is lavfi')
  const entries = listed.filter(({ device }) => !device).map(({ names }) => names)
  t.ok(entries.some((entry) => entry.includes('mov')), `the listing parsed (${entries.length} demuxers)`)
  t.same(entries.filter((entry) => !entry.some((name) => reachable.has(name))).map((entry) => entry.join(',')), [], 'every demuxer is one a whitelist names')
  for (const refused of ['sdp', 'rtsp', 'ffmetadata', 'tty', 'bin']) t.notOk(entries.some((entry) => entry.includes(refused)), `demuxer ${refused} is not built`)
})

t.test('every muxer and demuxer the policy allows is in the binary', async (t) => {
  const muxers = names(await listing('-muxers'), FORMAT_LINE)
  const demuxers = names(await listing('-demuxers'), FORMAT_LINE)
  t.ok(muxers.has('mp4') && demuxers.has('mov'), `the listings parsed (${muxers.size} muxers, ${demuxers.size} demuxers)`)
  t.same([...ALLOWED_MUXERS].filter((name) => !muxers.has(name)), [], 'ALLOWED_MUXERS are all there')
  t.same(ALLOWED_DEMUXERS.filter((name) => !demuxers.has(name)), [], 'ALLOWED_DEMUXERS are all there')
  // The list inputs' demuxers: hls, and dash (libxml2), with their segments'.
  t.same([...HLS_DEMUXERS.split(','), ...DASH_DEMUXERS.split(',')].filter((name) => !demuxers.has(name)), [], 'the HLS and DASH inputs\' demuxers are all there')
  for (const expected of ['mp4', 'webm', 'matroska', 'mov', 'ogg', 'mp3', 'flac', 'wav', 'gif', 'image2', 'webp', 'apng']) {
    t.ok(muxers.has(expected), `muxer ${expected}`)
  }
})

t.test('the encoders and decoders users expect are in the binary', async (t) => {
  const encoders = names(await listing('-encoders'), CODEC_LINE)
  const decoders = names(await listing('-decoders'), CODEC_LINE)
  t.same(EXPECTED_ENCODERS.filter((name) => !encoders.has(name)), [], 'no expected encoder is missing')
  t.same(EXPECTED_DECODERS.filter((name) => !decoders.has(name)), [], 'no expected decoder is missing')
})

t.test('every protocol of the binary is one contracts/ffmpeg-protocols.ts reviewed', async (t) => {
  const text = await listing('-protocols')
  const [, input = '', output = ''] = /Input:\n([\s\S]*?)Output:\n([\s\S]*)$/.exec(text) ?? []
  const protocols = new Set(`${input}\n${output}`.split('\n').map((line) => line.trim()).filter(Boolean))
  t.ok(protocols.has('file'), 'file is there')
  t.same([...protocols].filter((name) => !REVIEWED_PROTOCOLS.has(name)), [], 'no protocol the policy has not reviewed (add it to REVIEWED_PROTOCOLS with why a command cannot use it)')
  for (const network of ['http', 'https', 'tcp', 'udp', 'rtmp', 'tls']) t.notOk(protocols.has(network), `no ${network}: built without network protocols`)
})

t.test("the policy's input hardening holds against this binary: only files open", async (t) => {
  const dir = await scratchDir(t)
  await makeClip(join(dir, 'clip.mp4'), { seconds: 1 })
  const opened = await run(ffprobe, ['-v', 'error', ...INPUT_HARDENING, '-show_format', '-of', 'json', 'clip.mp4'], { cwd: dir })
  t.match(JSON.parse(opened.stdout), { format: { format_name: /mp4/ } }, 'a local file opens')
  const urls = { subfile: 'subfile,,start,0,end,100,,:clip.mp4', data: 'data:video/mp4;base64,AAAA', concat: 'concat:clip.mp4|clip.mp4' }
  for (const [protocol, url] of Object.entries(urls)) {
    const refused = await run(ffprobe, ['-v', 'error', ...INPUT_HARDENING, '-show_format', url], { cwd: dir }).then(
      () => null,
      (err: { stderr?: string }) => err.stderr ?? '',
    )
    t.match(refused, /not on whitelist/, `${protocol}: refused by -protocol_whitelist`)
  }
})

t.test('drawtext without a fontfile finds a font through fontconfig', async (t) => {
  const dir = await scratchDir(t)
  const args = ['-hide_banner', '-v', 'error', '-f', 'lavfi', '-i', 'color=c=black:s=160x90:d=0.04', '-frames:v', '1']
  await run(ffmpeg, [...args, join(dir, 'plain.png')])
  await run(ffmpeg, [...args, '-vf', 'drawtext=text=ffkube:fontsize=40:fontcolor=white:x=4:y=4', join(dir, 'text.png')])
  const [plain, text] = await Promise.all([readFile(join(dir, 'plain.png')), readFile(join(dir, 'text.png'))])
  t.notOk(text.equals(plain), 'the text changed the frame')
})
