import type { Db } from 'mongodb'
import type { FileDocument } from './file-document.js'

/**
 * Which of these file ids hold bytes in managed storage (`live`: not deleted,
 * not FAILED) and which do not (`gone`); ids with no record are left out.
 * The storage quota's repair asks it (StorageQuota.repair), from the admin CLI,
 * which has the database and no bucket.
 */
export function fileHoldings(db: Db): (ids: string[]) => Promise<Map<string, 'live' | 'gone'>> {
  const files = db.collection<FileDocument>('files')
  return async (ids) => {
    const states = new Map<string, 'live' | 'gone'>()
    // By _id one at a time: the lookup every store serves from its index (a repair is rare).
    for (const id of ids) {
      const file = await files.findOne({ _id: id }, { projection: { is_deleted: 1, status: 1 } })
      if (file) states.set(id, file.is_deleted || file.status === 'FAILED' ? 'gone' : 'live')
    }
    return states
  }
}
