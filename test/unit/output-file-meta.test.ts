import t from 'tap'
import { mediaMetaFromProbe, parseFrameRate, type FfprobeOutput } from '../../contracts/output-file-meta.js'

// ffprobe -show_format -show_streams -of json of real files (trimmed to the fields read).
const mp4: FfprobeOutput = {
  streams: [
    { codec_type: 'video', codec_name: 'h264', pix_fmt: 'yuv420p', width: 320, height: 240, avg_frame_rate: '25/1', r_frame_rate: '25/1', bit_rate: '269788', nb_frames: '50', disposition: { attached_pic: 0 } },
    { codec_type: 'audio', codec_name: 'aac', avg_frame_rate: '0/0', r_frame_rate: '0/0', bit_rate: '69671', sample_rate: '44100', channels: 1, nb_frames: '88', disposition: { attached_pic: 0 } },
  ],
  format: { format_name: 'mov,mp4,m4a,3gp,3g2,mj2', duration: '2.000000', size: '88175', bit_rate: '352700' },
}
const png: FfprobeOutput = {
  streams: [{ codec_type: 'video', codec_name: 'png', pix_fmt: 'rgb24', width: 32, height: 32, avg_frame_rate: '25/1', r_frame_rate: '25/1', disposition: { attached_pic: 0 } }],
  format: { format_name: 'png_pipe', size: '119' },
}
const gif: FfprobeOutput = {
  streams: [{ codec_type: 'video', codec_name: 'gif', pix_fmt: 'bgra', width: 320, height: 240, avg_frame_rate: '10/1', r_frame_rate: '10/1', nb_frames: '20', disposition: { attached_pic: 0 } }],
  format: { format_name: 'gif', duration: '2.000000', size: '158666', bit_rate: '634664' },
}
const mp3WithCover: FfprobeOutput = {
  streams: [
    { codec_type: 'audio', codec_name: 'mp3', bit_rate: '59628', sample_rate: '48000', channels: 2 },
    { codec_type: 'video', codec_name: 'mjpeg', pix_fmt: 'yuvj420p', width: 500, height: 500, avg_frame_rate: '0/0', r_frame_rate: '90000/1', disposition: { attached_pic: 1 } },
  ],
  format: { format_name: 'mp3', duration: '2.064000', size: '15551', bit_rate: '60275' },
}
const mkv: FfprobeOutput = {
  streams: [
    { codec_type: 'video', codec_name: 'vp9', pix_fmt: 'yuv420p', width: 1920, height: 1080, avg_frame_rate: '30000/1001', r_frame_rate: '30000/1001', tags: { BPS: '4000000' } },
    { codec_type: 'audio', codec_name: 'opus', sample_rate: '48000', channels: 2 },
  ],
  format: { format_name: 'matroska,webm', duration: '10.5', bit_rate: '4128000' },
}
const webmAudio: FfprobeOutput = {
  streams: [{ codec_type: 'audio', codec_name: 'opus', sample_rate: '48000', channels: 2 }],
  format: { format_name: 'matroska,webm', duration: '3.0', bit_rate: '96000' },
}

const cases: Array<[string, FfprobeOutput, string, number, Record<string, unknown>]> = [
  ['an H.264/AAC MP4', mp4, 'out.mp4', 88175, {
    size_mbytes: 0.08409, duration: 2, file_type: 'video', file_format: 'mp4', codec: 'h264', pixel_format: 'yuv420p', mime_type: 'video/mp4',
    width: 320, height: 240, frame_rate: 25, bitrate_video_kb: 270, bitrate_audio_kb: 70, sample_rate: 44100, channels: 1,
  }],
  ['a PNG image', png, 'thumb.png', 119, {
    size_mbytes: 0.000113, duration: null, file_type: 'image', file_format: 'png', codec: 'png', pixel_format: 'rgb24', mime_type: 'image/png',
    width: 32, height: 32, frame_rate: null, bitrate_video_kb: null, bitrate_audio_kb: null, sample_rate: null, channels: null,
  }],
  ['an animated GIF', gif, 'anim.gif', 158666, {
    duration: 2, file_type: 'video', file_format: 'gif', codec: 'gif', mime_type: 'image/gif', frame_rate: 10, bitrate_video_kb: 635, bitrate_audio_kb: null,
  }],
  ['an MP3 with cover art', mp3WithCover, 'song.mp3', 15551, {
    file_type: 'audio', file_format: 'mp3', codec: 'mp3', pixel_format: null, width: null, height: null, frame_rate: null,
    bitrate_video_kb: null, bitrate_audio_kb: 60, sample_rate: 48000, channels: 2, mime_type: 'audio/mpeg',
  }],
  ['a Matroska file with a BPS tag', mkv, 'film.mkv', 5_000_000, {
    file_type: 'video', file_format: 'matroska', codec: 'vp9', frame_rate: 29.97, bitrate_video_kb: 4000, bitrate_audio_kb: null, mime_type: 'video/x-matroska', duration: 10.5,
  }],
  ['a WebM file with audio only', webmAudio, 'a.webm', 36000, {
    file_type: 'audio', file_format: 'webm', codec: 'opus', bitrate_audio_kb: 96, bitrate_video_kb: null, mime_type: 'video/webm',
  }],
  ['an empty probe of an unreadable file', {}, 'blob.bin', 10, {
    size_mbytes: 0.00001, duration: null, file_type: null, file_format: null, codec: null, mime_type: null, width: null, frame_rate: null,
  }],
]

for (const [name, probe, filename, size, expected] of cases) {
  t.test(`maps ${name}`, async (t) => {
    t.match(mediaMetaFromProbe(probe, filename, size), expected)
  })
}

t.test('reads frame rates as ffprobe writes them', async (t) => {
  t.equal(parseFrameRate('30000/1001'), 29.97)
  t.equal(parseFrameRate('25/1'), 25)
  t.equal(parseFrameRate('0/0'), null)
  t.equal(parseFrameRate('24'), 24)
  t.equal(parseFrameRate(undefined), null)
  t.equal(parseFrameRate('x/y'), null)
})
