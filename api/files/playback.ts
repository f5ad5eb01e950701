/**
 * Playback without credentials for a managed multi-file output. The
 * managed bucket is private and a presigned URL signs one key, so a
 * playlist's relative entries would not resolve beside its own presigned
 * URL. For every playlist of the output (HLS, and DASH manifests) the
 * service writes a copy, under `playback/{command_id}/{alias}/{filename}`,
 * whose entries are presigned URLs: of the segments as stored, and of the
 * other playlists' copies (a master playlist's variants). The output's storage_url is the presigned
 * URL of its main playlist's copy; the stored files stay as the command
 * wrote them, so a download of every file plays offline. Everything is
 * signed at the same moment and so expires together, STORAGE_URL_TTL_SECONDS
 * after the command's SUCCESS was recorded.
 */
import { GetObjectCommand, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import type { MemberRecord } from './file-document.js'
import { mapLimited } from './map-limited.js'
import { rewriteDash } from './dash-rewrite.js'
import { playlistKind, rewriteHls, type MemberUrl, type PlaylistKind } from './playlist-rewrite.js'
import type { PresignedGets } from './managed-urls.js'

/** A playlist larger than this is left as it is (its storage_url then does not play): no FFmpeg playlist of an output under the file-count caps comes near. */
export const MAX_PLAYLIST_BYTES = 8 * 1024 * 1024

const REWRITERS: Record<PlaylistKind, (text: string, path: string, urlOf: MemberUrl, memberCount: number) => string> = { hls: rewriteHls, dash: rewriteDash }
const CONTENT_TYPES: Record<PlaylistKind, string> = { hls: 'application/vnd.apple.mpegurl', dash: 'application/dash+xml' }

/** Playlists read or written at once. */
const PLAYLISTS_IN_FLIGHT = 8

/** The managed key of a playlist's playable copy. */
export function playbackKey(commandId: string, alias: string, filename: string): string {
  return `playback/${commandId}/${alias}/${filename}`
}

/** What was written for an output's playback: the copies' keys, and the main file's playable URL (null when the main file is no playlist). */
export interface Playback {
  keys: string[]
  mainUrl: string | null
}

/**
 * A playlist's text, or null when it is too large to rewrite or not there.
 * An honest runner stores every file before its SUCCESS, so a missing one
 * is a forged or damaged report: retrying it (the projector naks an error)
 * would never end the command.
 */
async function readPlaylist(s3: S3Client, bucket: string, key: string): Promise<string | null> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key })).catch((err: unknown) => {
    if (err instanceof NoSuchKey) return null
    throw err
  })
  if (!object?.Body) return null
  if ((object.ContentLength ?? 0) > MAX_PLAYLIST_BYTES) {
    // Not read: close the connection's body.
    ;(object.Body as { destroy?: () => void }).destroy?.()
    return null
  }
  return object.Body.transformToString('utf8')
}

/** An output's playlists' texts by filename, as stored: those too large or missing are left out. */
export type PlaylistTexts = ReadonlyMap<string, string>

/**
 * Reads the stored playlists among an output's files. It needs only their
 * keys, so the service starts it before signing every member's URL (a
 * ladder's ~190 signatures): the reads' round trips to the store then pass
 * while the loop signs, instead of after it, on the way from SUCCESS to the
 * client.
 */
export async function readPlaylists(s3: S3Client, bucket: string, files: ReadonlyArray<{ filename: string; object_key: string }>): Promise<PlaylistTexts> {
  const playlists = files.filter((file) => playlistKind(file.filename) !== null)
  // A ladder has a handful of playlists: read them side by side (bounded: an output may hold thousands).
  const read = await mapLimited(playlists, PLAYLISTS_IN_FLIGHT, async (playlist) => [playlist.filename, await readPlaylist(s3, bucket, playlist.object_key)] as const)
  return new Map(read.filter((entry): entry is readonly [string, string] => entry[1] !== null))
}

/**
 * Writes the playable copies of an output's playlists (their texts from
 * readPlaylists of the same files; members with their presigned
 * storage_urls already set) and returns their keys and the main file's
 * playable URL. Writing them again (a replayed SUCCESS) puts the same layout
 * with fresh signatures; nothing else changes.
 */
export async function writePlayback(
  s3: S3Client,
  bucket: string,
  signer: PresignedGets,
  output: { commandId: string; alias: string; mainFilename: string; members: readonly MemberRecord[]; texts: PlaylistTexts },
): Promise<Playback> {
  const { texts } = output
  if (texts.size === 0) return { keys: [], mainUrl: null }
  const copyUrls = new Map<string, string>()
  for (const filename of texts.keys()) copyUrls.set(filename, await signer.url(playbackKey(output.commandId, output.alias, filename)))
  const byName = new Map(output.members.map((member) => [member.filename, member]))
  const urlOf = (filename: string) => copyUrls.get(filename) ?? byName.get(filename)?.storage_url ?? null
  // Written side by side, like the reads.
  const keys = await mapLimited([...texts], PLAYLISTS_IN_FLIGHT, async ([filename, text]) => {
    const key = playbackKey(output.commandId, output.alias, filename)
    const kind = playlistKind(filename) as PlaylistKind
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: REWRITERS[kind](text, filename, urlOf, output.members.length), ContentType: CONTENT_TYPES[kind] }))
    return key
  })
  return { keys, mainUrl: copyUrls.get(output.mainFilename) ?? null }
}
