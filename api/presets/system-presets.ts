import { createHash } from 'node:crypto'
import type { PresetDefinition } from './preset-rules.js'

/** A stable id per system preset, in the usual `preset_` + 32 hex form, so seeding is an idempotent upsert. */
export function systemPresetId(slug: string): string {
  return `preset_${createHash('sha256').update(`system-preset:${slug}`).digest('hex').slice(0, 32)}`
}

/**
 * The presets every account sees and none can change. Each must pass
 * checkPresetDefinition (a unit test holds them to it).
 */
export const SYSTEM_PRESETS: readonly (PresetDefinition & { slug: string })[] = [
  {
    slug: 'h264-720p',
    name: 'Compress to H.264 720p',
    description: 'Scales to 720 lines (keeping the aspect ratio), H.264 CRF 23 and AAC 128 kb/s, MP4 ready for streaming.',
    command_type: 'FFMPEG_COMMAND',
    ffmpeg_command:
      'ffmpeg -i {{in_video}} -vf scale=-2:720 -c:v libx264 -preset medium -crf 23 -pix_fmt yuv420p -c:a aac -b:a 128k -movflags +faststart {{out_video}}',
    ffmpeg_commands: null,
    input_file_keys: ['in_video'],
    output_file_definitions: { out_video: 'video-720p.mp4' },
    metadata: null,
  },
  {
    slug: 'mp3-extract',
    name: 'Extract audio as MP3',
    description: 'Drops the video and encodes the first audio stream as VBR MP3 (quality 2, about 190 kb/s).',
    command_type: 'FFMPEG_COMMAND',
    ffmpeg_command: 'ffmpeg -i {{in_video}} -vn -map 0:a:0 -c:a libmp3lame -q:a 2 {{out_audio}}',
    ffmpeg_commands: null,
    input_file_keys: ['in_video'],
    output_file_definitions: { out_audio: 'audio.mp3' },
    metadata: null,
  },
  {
    slug: 'jpg-thumbnail',
    name: 'JPG thumbnail',
    description: 'One frame at 1 second, 640 pixels wide.',
    command_type: 'FFMPEG_COMMAND',
    ffmpeg_command: 'ffmpeg -ss 1 -i {{in_video}} -frames:v 1 -vf scale=640:-2 -q:v 3 {{out_thumbnail}}',
    ffmpeg_commands: null,
    input_file_keys: ['in_video'],
    output_file_definitions: { out_thumbnail: 'thumbnail.jpg' },
    metadata: null,
  },
  {
    slug: 'gif-preview',
    name: 'GIF preview',
    description: 'The first 5 seconds as a 480-pixel, 10 fps GIF with its own palette (two chained commands).',
    command_type: 'CHAINED_COMMAND',
    ffmpeg_command: null,
    ffmpeg_commands: [
      'ffmpeg -t 5 -i {{in_video}} -vf fps=10,scale=480:-1:flags=lanczos,palettegen palette.png',
      'ffmpeg -t 5 -i {{in_video}} -i palette.png -lavfi fps=10,scale=480:-1:flags=lanczos[x];[x][1:v]paletteuse {{out_gif}}',
    ],
    input_file_keys: ['in_video'],
    output_file_definitions: { out_gif: 'preview.gif' },
    metadata: null,
  },
  {
    slug: 'h264-renditions',
    name: 'H.264 renditions 1080p, 720p, 480p',
    description: 'Three MP4 renditions encoded in parallel, one command each.',
    command_type: 'MULTIPLE_COMMAND',
    ffmpeg_command: null,
    ffmpeg_commands: [
      'ffmpeg -i {{in_video}} -vf scale=-2:1080 -c:v libx264 -crf 22 -pix_fmt yuv420p -c:a aac -b:a 160k -movflags +faststart {{out_1080p}}',
      'ffmpeg -i {{in_video}} -vf scale=-2:720 -c:v libx264 -crf 23 -pix_fmt yuv420p -c:a aac -b:a 128k -movflags +faststart {{out_720p}}',
      'ffmpeg -i {{in_video}} -vf scale=-2:480 -c:v libx264 -crf 24 -pix_fmt yuv420p -c:a aac -b:a 96k -movflags +faststart {{out_480p}}',
    ],
    input_file_keys: ['in_video'],
    output_file_definitions: { out_1080p: 'video-1080p.mp4', out_720p: 'video-720p.mp4', out_480p: 'video-480p.mp4' },
    metadata: null,
  },
]
