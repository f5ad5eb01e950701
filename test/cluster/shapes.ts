/**
 * The files the cluster lane's commands of every shape read (issue 28): a
 * subtitle file and a font as inputs of their own, a zip folder holding two
 * clips and a concat list over them, and a hostile zip whose entry climbs out
 * of the work dir. Written into `dir` for the lane's input server to serve.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { makeClip } from '../harness/media.js'
import { buildZip } from '../harness/zip-writer.js'

/** Debian's fonts-dejavu-core, on the host as in the runner image. */
const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'

export interface ShapeFiles {
  srt: string
  font: string
  /** clips/a.mp4, clips/b.mp4 (1 s each) and list.txt naming both for the concat demuxer. */
  concatZip: string
  /** An entry named ../../../../tmp/ffkube-lane-slip.txt beside a clip. */
  slipZip: string
}

export async function writeShapeFiles(dir: string): Promise<ShapeFiles> {
  const [a, b] = await Promise.all([
    makeClip(join(dir, 'shape-a.mp4'), { seconds: 1, width: 320, height: 240 }),
    makeClip(join(dir, 'shape-b.mp4'), { seconds: 1, width: 320, height: 240 }),
  ])
  const [bytesA, bytesB] = await Promise.all([readFile(a), readFile(b)])
  const files: ShapeFiles = {
    srt: join(dir, 'subs.srt'),
    font: join(dir, 'DejaVuSans.ttf'),
    concatZip: join(dir, 'concat.zip'),
    slipZip: join(dir, 'slip.zip'),
  }
  await Promise.all([
    writeFile(files.srt, '1\n00:00:00,000 --> 00:00:10,000\nBURNED IN\n'),
    copyFile(FONT, files.font),
    writeFile(files.concatZip, buildZip([
      { name: 'clips/a.mp4', data: bytesA },
      { name: 'clips/b.mp4', data: bytesB },
      { name: 'list.txt', data: "file 'clips/a.mp4'\nfile 'clips/b.mp4'\n" },
    ])),
    writeFile(files.slipZip, buildZip([
      { name: '../../../../tmp/ffkube-lane-slip.txt', data: 'x' },
      { name: 'clips/a.mp4', data: bytesA },
    ])),
  ])
  return files
}

