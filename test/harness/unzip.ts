/** Reads a whole zip from memory with yauzl: each entry's name, compression method and content, in the zip's order. */
import yauzl from 'yauzl'

export interface ZipEntryRead {
  name: string
  /** 0 stored, 8 deflate. */
  compressionMethod: number
  data: Buffer
}

export function readZip(zip: Buffer): Promise<ZipEntryRead[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (error, zipfile) => {
      if (error || !zipfile) return reject(error ?? new Error('no zip'))
      const entries: ZipEntryRead[] = []
      zipfile.on('error', reject)
      zipfile.on('end', () => resolve(entries))
      zipfile.on('entry', (entry: yauzl.Entry) => {
        zipfile.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError ?? new Error('no stream'))
          const chunks: Buffer[] = []
          stream.on('data', (chunk: Buffer) => chunks.push(chunk))
          stream.on('error', reject)
          stream.on('end', () => {
            entries.push({ name: entry.fileName, compressionMethod: entry.compressionMethod, data: Buffer.concat(chunks) })
            zipfile.readEntry()
          })
        })
      })
      zipfile.readEntry()
    })
  })
}
