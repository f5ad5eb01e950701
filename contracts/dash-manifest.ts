/**
 * A DASH manifest (MPD) read as FFmpeg's DASH demuxer sees it through
 * libxml2 (dashdec.c: xmlReadMemory with no options, then element names
 * compared case-insensitively, attributes read with xmlGetProp, BaseURL text
 * with xmlNodeGetContent), for the checks of what it makes ffmpeg open.
 *
 * Not a general XML parser: it reads the plain subset a manifest needs —
 * elements, attributes, text, comments, processing instructions, the five
 * XML entities and character references — and refuses everything else
 * rather than guess how libxml2 would read it: a DOCTYPE (its entities and
 * ATTLIST defaults would put text where no tag shows it), CDATA sections,
 * markup inside an element whose text is a URL, an encoding whose bytes are
 * not ASCII's (UTF-16: every check here reads bytes as latin1), undefined
 * entities, and anything malformed (libxml2, given no RECOVER option, fails
 * on it too). Pure.
 */

/** One attribute as libxml2 gives it: entities decoded, tabs and line breaks as spaces. */
export interface MpdAttribute {
  name: string
  value: string
}

/** One element: its qualified name, attributes, and (for URL elements) its text. */
export interface MpdElement {
  name: string
  /** 1-based line of its start tag. */
  line: number
  attributes: MpdAttribute[]
  /** The decoded text of an element of URL_TEXT_ELEMENTS; '' for others. */
  text: string
}

/** A manifest read, or why it is not read. */
export type MpdReading = { ok: true; elements: MpdElement[] } | { ok: false; line: number; reason: string }

/** Elements whose text is a URL (BaseURL is the one dashdec.c opens; the others are refused as strictly). */
export const URL_TEXT_ELEMENTS: ReadonlySet<string> = new Set(['baseurl', 'location', 'patchlocation'])

/** The local part of a qualified name, lower case: libxml2 drops a declared prefix, FFmpeg ignores case. */
export function localName(name: string): string {
  return name.slice(name.indexOf(':') + 1).toLowerCase()
}

/** Encodings whose bytes read as latin1 keep every ASCII character where it is. */
const ASCII_ENCODINGS = /^(?:utf-?8|us-ascii|ascii|iso-8859-\d{1,2}|iso-?latin-?1|latin-?1)$/i
const NAME = /[A-Za-z_][A-Za-z0-9_.-]*(?::[A-Za-z_][A-Za-z0-9_.-]*)?/y
const ATTRIBUTE = /[ \t\r\n]+([A-Za-z_][A-Za-z0-9_.-]*(?::[A-Za-z_][A-Za-z0-9_.-]*)?)[ \t\r\n]*=[ \t\r\n]*(?:"([^"<]*)"|'([^'<]*)')/y
const TAG_END = /[ \t\r\n]*(\/?)>/y
const XML_DECLARATION = /^<\?xml[ \t\r\n][\s\S]*?\?>/
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }

/** Decodes the five XML entities and character references; null on any other `&`. */
export function decodeEntities(raw: string): string | null {
  let bad = false
  const decoded = raw.replace(/&([^;&]*);?/g, (whole, body: string) => {
    const named = ENTITIES[body]
    const code = /^#x[0-9a-f]{1,6}$/i.test(body) ? parseInt(body.slice(2), 16) : /^#\d{1,7}$/.test(body) ? parseInt(body.slice(1), 10) : NaN
    if (!whole.endsWith(';') || (named === undefined && !(code >= 1 && code <= 0x10ffff))) bad = true
    return named ?? (Number.isNaN(code) ? '' : String.fromCodePoint(Math.min(code, 0x10ffff)))
  })
  return bad ? null : decoded
}

/** Reads `text` (the file's bytes as latin1) as a manifest. */
export function readMpd(text: string): MpdReading {
  let at = text.startsWith('\u00ef\u00bb\u00bf') ? 3 : 0
  let line = 1
  let counted = 0
  const lineAt = (offset: number): number => {
    for (; counted < offset; counted++) if (text.charCodeAt(counted) === 10) line++
    return line
  }
  const fail = (offset: number, reason: string): MpdReading => ({ ok: false, line: lineAt(offset), reason })
  if (text.includes('\0') || /^(?:\u00fe\u00ff|\u00ff\u00fe)/.test(text)) return fail(0, 'is not UTF-8 or ASCII text (a zero byte or a UTF-16 byte order mark)')
  const declaration = XML_DECLARATION.exec(text.slice(at))
  if (declaration) {
    const encoding = /encoding[ \t\r\n]*=[ \t\r\n]*["']([^"']*)["']/.exec(declaration[0])?.[1]
    if (encoding !== undefined && !ASCII_ENCODINGS.test(encoding)) return fail(at, `declares the encoding "${encoding}"; a manifest is read in UTF-8`)
    at += declaration[0].length
  }
  const elements: MpdElement[] = []
  const open: MpdElement[] = []
  let roots = 0
  while (at < text.length) {
    const lt = text.indexOf('<', at)
    const chunk = text.slice(at, lt === -1 ? text.length : lt)
    if (chunk !== '') {
      const decoded = decodeEntities(chunk)
      if (decoded === null) return fail(at, 'uses an entity other than the five XML ones or a character reference')
      const top = open.at(-1)
      if (top === undefined && decoded.trim() !== '') return fail(at, 'has text outside its root element')
      if (top !== undefined && URL_TEXT_ELEMENTS.has(localName(top.name))) top.text += decoded
    }
    if (lt === -1) break
    at = lt
    const inUrl = open.length > 0 && URL_TEXT_ELEMENTS.has(localName(open.at(-1)!.name))
    if (text.startsWith('<!--', at) || text.startsWith('<?', at)) {
      const end = text.indexOf(text[at + 1] === '!' ? '-->' : '?>', at + 2)
      if (end === -1) return fail(at, 'has a comment or processing instruction that does not end')
      if (inUrl) return fail(at, `has a comment or processing instruction inside <${open.at(-1)!.name}>`)
      at = end + (text[at + 1] === '!' ? 3 : 2)
      continue
    }
    if (text.startsWith('<!', at)) return fail(at, 'has a DOCTYPE, a declaration or a CDATA section, which a manifest is not read with')
    if (text.startsWith('</', at)) {
      NAME.lastIndex = at + 2
      const name = NAME.exec(text)?.[0]
      const top = open.pop()
      if (name === undefined || top?.name !== name) return fail(at, 'has an end tag that does not close the open element')
      TAG_END.lastIndex = at + 2 + name.length
      const end = TAG_END.exec(text)
      if (end === null || end[1] === '/') return fail(at, `has a malformed end tag </${name}>`)
      at = TAG_END.lastIndex
      continue
    }
    if (inUrl) return fail(at, `has an element inside <${open.at(-1)!.name}>`)
    const element = readStartTag(text, at + 1)
    if (typeof element === 'string') return fail(at, element)
    if (open.length === 0 && ++roots > 1) return fail(at, 'has more than one root element')
    const start: MpdElement = { name: element.name, line: lineAt(at), attributes: element.attributes, text: '' }
    elements.push(start)
    if (!element.empty) open.push(start)
    at = element.end
  }
  if (open.length > 0) return fail(text.length, `ends inside <${open.at(-1)!.name}>`)
  if (roots === 0) return fail(0, 'has no root element')
  return { ok: true, elements }
}

/** The start tag whose name begins at `at`: its name, attributes, whether it is empty (`/>`), and where it ends; or why it is refused. */
function readStartTag(text: string, at: number): { name: string; attributes: MpdAttribute[]; empty: boolean; end: number } | string {
  NAME.lastIndex = at
  const name = NAME.exec(text)?.[0]
  if (name === undefined) return 'has a tag whose name is not a plain XML name'
  const attributes: MpdAttribute[] = []
  let end = at + name.length
  for (;;) {
    TAG_END.lastIndex = end
    const close = TAG_END.exec(text)
    if (close !== null) return { name, attributes, empty: close[1] === '/', end: TAG_END.lastIndex }
    ATTRIBUTE.lastIndex = end
    const attribute = ATTRIBUTE.exec(text)
    if (attribute === null) return `has a malformed attribute in <${name}>`
    const value = decodeEntities((attribute[2] ?? attribute[3] ?? '').replace(/[\t\r\n]/g, ' '))
    if (value === null) return `uses an entity other than the five XML ones in an attribute of <${name}>`
    if (attributes.some((a) => a.name === attribute[1])) return `repeats the attribute ${attribute[1]} in <${name}>`
    attributes.push({ name: attribute[1]!, value })
    end = ATTRIBUTE.lastIndex
  }
}
