/**
 * Outputs of many files at submit time, through HTTP: the shapes the policy
 * allows are accepted, and every hostile name (a pattern leaving the work
 * dir, an absolute playlist, segments or a segment list outside it, a tee
 * slave outside it, a key info file) is a 400 naming the argument, with
 * nothing recorded.
 */
import t from 'tap'
import { startApi } from '../harness/api.js'

t.test('multi-file outputs at submit', async (t) => {
  const api = await startApi(t)
  const { api_key } = await api.createAccount('business')
  const post = (payload: object) => api.app.inject({ method: 'POST', url: '/api/v1/run-ffmpeg-command', headers: { 'x-api-key': api_key }, payload })
  const input_files = { in_v: 'https://media.example.com/a.mp4' }

  t.test('hostile names are refused with a clear 400 and nothing is recorded', async (t) => {
    const before = await api.db.collection('commands').countDocuments({})
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [{ out_t: 'x_%d.jpg' }, 'ffmpeg -i {{in_v}} -vf fps=1 ../x_%d.jpg {{out_t}}', /output \.\.\/x_%d\.jpg: paths leaving the work directory are not allowed/],
      [{ out_h: 'x.m3u8' }, 'ffmpeg -i {{in_v}} -f hls /tmp/x.m3u8 {{out_h}}', /output \/tmp\/x\.m3u8: absolute paths are not allowed/],
      [{ out_h: 'x.m3u8' }, 'ffmpeg -i {{in_v}} -f hls -hls_segment_filename /tmp/s%d.ts {{out_h}}', /-hls_segment_filename \/tmp\/s%d\.ts: the value must be a plain file name/],
      [{ out_p: 'p_%03d.mp4' }, 'ffmpeg -i {{in_v}} -f segment -segment_list file:/x {{out_p}}', /-segment_list file:\/x: the value must be a plain file name/],
      [{ out_a: 'a.mp4' }, "ffmpeg -i {{in_v}} -f tee '[f=mp4]/tmp/x.mp4|{{out_a}}'", /output \/tmp\/x\.mp4: absolute paths are not allowed/],
      [{ out_h: 'x.m3u8' }, 'ffmpeg -i {{in_v}} -f hls -hls_key_info_file key.info {{out_h}}', /option -hls_key_info_file is not allowed: it reads a key info file/],
      [{ out_t: 'x_%s.jpg' }, 'ffmpeg -i {{in_v}} {{out_t}}', /%d, %0Nd \(e\.g\. %03d\), %v and %%/],
    ]
    for (const [output_files, ffmpeg_command, message] of cases) {
      const res = await post({ input_files, output_files, ffmpeg_command })
      t.equal(res.statusCode, 400, `${ffmpeg_command}: ${res.body}`)
      t.match(res.json(), { error: 'INVALID_REQUEST', message }, ffmpeg_command)
    }
    t.equal(await api.db.collection('commands').countDocuments({}), before, 'nothing refused was recorded')
  })

  t.test('sequences, hls, dash, segment and tee into declared outputs are accepted', async (t) => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ out_t: 'thumb_%03d.jpg' }, 'ffmpeg -i {{in_v}} -vf fps=1 {{out_t}}'],
      [{ out_h: 'playlist.m3u8' }, 'ffmpeg -i {{in_v}} -f hls -hls_time 1 -hls_segment_filename seg_%03d.ts {{out_h}}'],
      [{ out_d: 'manifest.mpd' }, 'ffmpeg -i {{in_v}} -f dash -seg_duration 1 {{out_d}}'],
      [{ out_p: 'part_%03d.mp4' }, 'ffmpeg -i {{in_v}} -f segment -segment_time 1 {{out_p}}'],
      [{ out_l: 'stream_%v.m3u8' }, "ffmpeg -i {{in_v}} -map 0:v -map 0:v -f hls -var_stream_map 'v:0 v:1' -master_pl_name master.m3u8 {{out_l}}"],
      [{ out_a: 'a.mp4', out_h: 'b.m3u8' }, "ffmpeg -i {{in_v}} -f tee '[f=mp4]{{out_a}}|[f=hls:hls_time=1]{{out_h}}'"],
    ]
    for (const [output_files, ffmpeg_command] of cases) {
      const res = await post({ input_files, output_files, ffmpeg_command })
      t.equal(res.statusCode, 200, `${ffmpeg_command}: ${res.body}`)
    }
  })
})
