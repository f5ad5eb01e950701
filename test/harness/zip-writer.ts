/**
 * A tiny zip writer for tests: well-formed zips, and the hostile ones a real
 * archiver refuses to make (names with `..`, absolute names, symlink entries,
 * headers that lie about sizes, huge declared sizes). Stored or deflated
 * entries, no zip64, no encryption.
 */
import { crc32, deflateRawSync } from 'node:zlib'

export interface ZipEntrySpec {
  /** As stored; a directory ends with '/'. */
  name: string
  data?: Buffer | string
  /** 'deflate' (default for files) or 'stored'. */
  method?: 'stored' | 'deflate'
  /** Unix st_mode (0o100644 by default, 0o040755 for a name ending in '/'); 0o120777 makes a symlink whose target is `data`. */
  mode?: number
  /** Overrides the uncompressed size written in both headers (a lie when it differs from the data). */
  declaredSize?: number
  /** Sets the general purpose flag's encryption bit (the data is not really encrypted). */
  encrypted?: boolean
  /** An Info-ZIP Unicode Path extra field (0x7075) naming the entry otherwise; readers prefer it to `name`. */
  unicodePath?: string
  /** The name in the local header, when it should differ from the central directory's. */
  localName?: string
}

/** The Info-ZIP Unicode Path extra field: version 1, the CRC-32 of the plain name, the UTF-8 name. */
function unicodePathField(name: Buffer, path: string): Buffer {
  const utf8 = Buffer.from(path, 'utf8')
  const field = Buffer.alloc(9 + utf8.length)
  field.writeUInt16LE(0x7075, 0)
  field.writeUInt16LE(5 + utf8.length, 2)
  field.writeUInt8(1, 4)
  field.writeUInt32LE(crc32(name), 5)
  utf8.copy(field, 9)
  return field
}

const VERSION_MADE_BY_UNIX = (3 << 8) | 20

/** The zip of `entries`, in order; `declaredCount` overrides the entry count of the end record. */
export function buildZip(entries: readonly ZipEntrySpec[], options: { declaredCount?: number } = {}): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const spec of entries) {
    const name = Buffer.from(spec.name, 'utf8')
    const localName = Buffer.from(spec.localName ?? spec.name, 'utf8')
    const extra = spec.unicodePath === undefined ? Buffer.alloc(0) : unicodePathField(name, spec.unicodePath)
    const raw = Buffer.isBuffer(spec.data) ? spec.data : Buffer.from(spec.data ?? '', 'utf8')
    const isDirectory = spec.name.endsWith('/')
    const method = spec.method ?? (isDirectory ? 'stored' : 'deflate')
    const body = method === 'deflate' ? deflateRawSync(raw) : raw
    const size = spec.declaredSize ?? raw.length
    const mode = spec.mode ?? (isDirectory ? 0o040755 : 0o100644)
    // Bit 11: the name is UTF-8. Bit 0: encrypted.
    const flags = 0x0800 | (spec.encrypted ? 1 : 0)
    const methodCode = method === 'deflate' ? 8 : 0
    const crc = crc32(raw)

    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(flags, 6)
    local.writeUInt16LE(methodCode, 8)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(body.length, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(localName.length, 26)
    locals.push(local, localName, body)

    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(VERSION_MADE_BY_UNIX, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(flags, 8)
    central.writeUInt16LE(methodCode, 10)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(body.length, 20)
    central.writeUInt32LE(size, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt16LE(extra.length, 30)
    central.writeUInt32LE(((mode << 16) | (isDirectory ? 0x10 : 0)) >>> 0, 38)
    central.writeUInt32LE(offset, 42)
    centrals.push(central, name, extra)

    offset += local.length + localName.length + body.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  const count = options.declaredCount ?? entries.length
  end.writeUInt16LE(count, 8)
  end.writeUInt16LE(count, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}
