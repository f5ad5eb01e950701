/**
 * A warm pod's runner starts before its command exists (operator/warm-pods.ts,
 * docs/adr/0009-pods-created-ahead.md): it waits for the file the kubelet
 * writes from its pod's `ffkube.io/command-spec` annotation, empty until the
 * operator claims the pod. Only a principal that may patch the pod can write
 * it, and the mount is read-only in both containers.
 *
 * The kubelet replaces a downward API volume's contents atomically (a new
 * directory, then a rename of the `..data` link), so a read sees either the
 * empty file or the whole spec, never half of one. The directory is watched
 * (inotify sees the rename at once) and read again every POLL_MS as well, in
 * case a filesystem does not report it.
 */
import { watch, type FSWatcher } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'

const POLL_MS = 100

async function readIfAny(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return ''
    throw error
  }
}

/** Resolves with the file's text once it holds something; `signal` gives up. */
export async function awaitSpecFile(path: string, options: { pollMs?: number; signal?: AbortSignal } = {}): Promise<string> {
  let wake: () => void = () => undefined
  let watcher: FSWatcher | undefined
  try {
    watcher = watch(dirname(path), () => wake())
    watcher.on('error', () => undefined)
  } catch {
    // No inotify here: the poll alone finds it.
  }
  options.signal?.addEventListener('abort', () => wake(), { once: true })
  try {
    for (;;) {
      options.signal?.throwIfAborted()
      const text = await readIfAny(path)
      if (text.trim() !== '') return text
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.pollMs ?? POLL_MS)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  } finally {
    watcher?.close()
  }
}
