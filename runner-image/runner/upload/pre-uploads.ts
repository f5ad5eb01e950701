/**
 * Storing a multi-file output's files while ffmpeg still writes others (one
 * process running every phase: local mode). An HLS ladder is hundreds of
 * segments, each final once ffmpeg moves on to the next; storing them only
 * after ffmpeg ends made storing most of a command's overhead over ffmpeg
 * (docs/benchmarks/multi-file.md).
 *
 * Nothing here decides what is delivered: a file is sent early, once, when it
 * is a regular file (lstat) in an output's folder untouched for SETTLED_MS, and
 * the final upload (s3-upload.ts uploadOutputs) walks the folders again as
 * always, sends every file that is new or whose size, mtime or inode changed
 * since (a playlist is rewritten after each segment), and deletes the objects
 * of files gone since (hls `delete_segments`). A command that fails deletes
 * every key stored here too. Early uploads stop at the command's file cap,
 * and before their bytes would pass the storage room the command was handed
 * (CommandSpec.storageRoomBytes), so the bucket never holds more of it.
 */
import { lstatSync, readdirSync, readFileSync, type Dirent, type Stats } from 'node:fs'
import { join } from 'node:path'
import { objectKeyProblem } from '../../../contracts/object-keys.js'
import { mimeTypeForFilename } from '../../../contracts/output-file-meta.js'
import type { EarlierUploads, FileToUpload, ObjectStore } from './s3-upload.js'

/** A file unchanged this long is taken to be closed by ffmpeg; a wrong guess costs one more upload at the end. */
const SETTLED_MS = 300
/** Fewer than the final upload's: ffmpeg is still using the cores. */
const PRE_UPLOADS_IN_FLIGHT = 4
/**
 * A file is read whole before it is sent, so ffmpeg rewriting it meanwhile
 * (a playlist is truncated and written again) can never leave a request
 * shorter than its Content-Length; larger files wait for the final upload.
 */
const MAX_EARLY_BYTES = 8 * 1024 * 1024

interface Stored {
  path: string
  /** size, mtime and inode when it was read; '' when it changed while being sent. */
  signature: string
}

function signatureOf(stats: { size: number; mtimeMs: number; ino: number }): string {
  return `${stats.size}:${stats.mtimeMs}:${stats.ino}`
}

/*
 * The folder is read, and each file judged and read, with synchronous calls:
 * the files are small and in the page cache (ffmpeg has just written them), so
 * each call is a few microseconds of the loop, where a promise of node:fs costs
 * a hand-off to the thread pool and back (four for a readFile: open, stat,
 * read, close). Beside an encode that keeps both cores busy every hand-off is
 * a wake-up that waits for a core; the runner's CPU profile during an HLS
 * ladder had the promises' file handles and lstats as its largest share.
 */

/** Its lstat, or null when it is gone or unreadable. */
function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null
  } catch {
    return null
  }
}

/** A folder's entries; none when it is gone or unreadable. */
function entriesOf(path: string): Dirent[] {
  try {
    return readdirSync(path, { withFileTypes: true })
  } catch {
    return []
  }
}

export class PreUploads implements EarlierUploads {
  #store: Promise<ObjectStore> | null = null
  readonly #stored = new Map<string, Stored>()
  readonly #tried = new Set<string>()
  readonly #inFlight = new Map<string, Promise<void>>()
  /** Sends started, counted when they start, so the cap holds before any has reached the store. */
  #started = 0
  /** Bytes of the sends started, counted likewise against maxBytes. */
  #startedBytes = 0
  #stopped = false

  constructor(
    private readonly open: () => Promise<ObjectStore>,
    private readonly workDir: string,
    private readonly maxFiles: number,
    /** The storage room left (managed storage with a quota); Infinity when none applies. */
    private readonly maxBytes = Infinity,
  ) {}

  store(): Promise<ObjectStore> {
    this.#store ??= this.open()
    return this.#store
  }

  /** While ffmpeg runs: starts storing the settled files of these folders, a few at a time. */
  async offer(folders: ReadonlyArray<{ alias: string; path: string }>): Promise<void> {
    for (const folder of folders) {
      for (const entry of entriesOf(join(this.workDir, folder.path))) {
        if (this.#stopped || this.#inFlight.size >= PRE_UPLOADS_IN_FLIGHT || this.#started >= this.maxFiles) return
        if (!entry.isFile() || this.#inFlight.has(entry.name)) continue
        const path = `${folder.path}/${entry.name}`
        // Sent once is enough while ffmpeg runs: settle() finds whether it changed since (a playlist is rewritten
        // after every segment) and the final upload sends it again then. Looking again at every file of the folder
        // on every offer was most of the runner's CPU beside an HLS encode (docs/benchmarks/multi-file.md), and
        // resending each playlist every second stole more from ffmpeg.
        if (this.#stored.get(entry.name)?.path === path) continue
        const stats = lstatOrNull(join(this.workDir, path))
        if (!stats?.isFile() || stats.size > MAX_EARLY_BYTES || Date.now() - stats.mtimeMs < SETTLED_MS) continue
        // Past the room the final upload refuses the outputs anyway (upload-phase.ts): nothing more goes early.
        if (this.#startedBytes + stats.size > this.maxBytes) return this.stop()
        this.#startedBytes += stats.size
        this.#send({ alias: folder.alias, filename: entry.name, path, contentType: mimeTypeForFilename(entry.name) }, signatureOf(stats))
      }
    }
  }

  #send(file: FileToUpload, signature: string): void {
    this.#started++
    const sending = (async () => {
      const store = await this.store()
      const body = readFileSync(join(this.workDir, file.path))
      // Read as it was when judged settled, else it is left for the final upload.
      const after = lstatOrNull(join(this.workDir, file.path))
      if (!after?.isFile() || signatureOf(after) !== signature || body.length !== after.size) return
      // Over S3's limit: the final upload refuses the command before storing anything more (upload-phase.ts keysWithinLimit).
      if (objectKeyProblem(store.keyOf(file.filename)) !== null) throw new Error('object key too long')
      this.#tried.add(store.keyOf(file.filename))
      await store.putBytes(file, body)
      this.#stored.set(file.filename, { path: file.path, signature })
    })()
      // A failure here fails nothing: the final upload sends the file again and reports its own failure.
      .catch(() => {
        this.#stopped = true
        this.#stored.delete(file.filename)
      })
      .finally(() => this.#inFlight.delete(file.filename))
    this.#inFlight.set(file.filename, sending)
  }

  /** Stops starting new ones (ffmpeg ended). */
  stop(): void {
    this.#stopped = true
  }

  async settle(files: readonly FileToUpload[]): Promise<{ todo: FileToUpload[]; stale: string[] }> {
    this.stop()
    await Promise.all(this.#inFlight.values())
    const store = await this.store()
    const finalKeys = new Set(files.map((file) => store.keyOf(file.filename)))
    const todo: FileToUpload[] = []
    for (const file of files) {
      const earlier = this.#stored.get(file.filename)
      const stats = earlier?.path === file.path ? lstatOrNull(join(this.workDir, file.path)) : null
      if (!stats || earlier?.signature !== signatureOf(stats)) todo.push(file)
    }
    const stale = [...this.#tried].filter((key) => !finalKeys.has(key))
    return { todo, stale }
  }

  keys(): string[] {
    return [...this.#tried]
  }

  /** After a failure: deletes every key stored or tried here. */
  async discard(): Promise<void> {
    this.stop()
    await Promise.all(this.#inFlight.values())
    if (this.#tried.size === 0) return
    // Best effort, and never in place of the failure being reported.
    const store = await this.store().catch(() => null)
    await store?.delete([...this.#tried])
  }

  async close(): Promise<void> {
    if (this.#store) (await this.#store.catch(() => null))?.close()
  }
}
