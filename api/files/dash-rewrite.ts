/**
 * A DASH manifest rewritten so it plays from a bucket without credentials
 * (see playlist-rewrite.ts for HLS and the why). A SegmentTemplate names
 * its segments by a pattern (`chunk-stream$RepresentationID$-$Number%05d$.m4s`),
 * which no presigned URL can stand for, so each Representation's template
 * becomes a SegmentList naming every segment by its own URL, with the
 * template's timing (timescale, duration, SegmentTimeline) kept. Written
 * for the manifests FFmpeg's dash muxer writes: a template inside each
 * Representation, no BaseURL. Anything else is left as it was, and the
 * manifest then plays only where its relative names resolve (a destination
 * with a public_base_url). Pure.
 */
import { resolveReference, type MemberUrl } from './playlist-rewrite.js'

/** An attribute's value in an element's attribute text, XML entities decoded. */
function attribute(attributes: string, name: string): string | null {
  const match = new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)
  return match ? unescapeXml(match[1] as string) : null
}

function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp);/g, (_, entity: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[entity] as string)
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** `$Name$` or `$Name%05d$` with its value, as DASH's template rules expand it. */
function expandTemplate(template: string, values: { RepresentationID: string; Bandwidth: string; Number?: number; Time?: number }): string | null {
  let unknown = false
  const expanded = template.replace(/\$(\w*)(%0(\d+)d)?\$/g, (_whole, name: string, format: string | undefined, width: string | undefined) => {
    if (name === '') return '$'
    const value = (values as Record<string, string | number | undefined>)[name]
    if (value === undefined) {
      unknown = true
      return ''
    }
    return format ? String(value).padStart(Number(width), '0') : String(value)
  })
  return unknown ? null : expanded
}

/** The start times of a SegmentTimeline's segments (`<S t d r>`), or null for one this module does not expand (r < 0, "until the end"). */
function timelineTimes(timeline: string): number[] | null {
  const times: number[] = []
  let time = 0
  for (const match of timeline.matchAll(/<S\b([^>]*)\/?>/g)) {
    const attributes = match[1] as string
    const t = attribute(attributes, 't')
    const d = Number(attribute(attributes, 'd'))
    const r = Number(attribute(attributes, 'r') ?? '0')
    if (t !== null) time = Number(t)
    if (!Number.isFinite(d) || !Number.isInteger(r) || r < 0) return null
    for (let i = 0; i <= r; i++) {
      times.push(time)
      time += d
    }
  }
  return times
}

/** The segments' URLs of one template, in order, or null when any is not a member of the output. */
function segmentUrls(media: string, ids: { RepresentationID: string; Bandwidth: string }, startNumber: number, times: number[] | null, resolveUrl: (reference: string) => string | null, memberCount: number): string[] | null {
  const urls: string[] = []
  if (media.includes('$Time')) {
    if (!times) return null
    for (const [i, time] of times.entries()) {
      const reference = expandTemplate(media, { ...ids, Time: time, Number: startNumber + i })
      const url = reference === null ? null : resolveUrl(reference)
      if (url === null) return null
      urls.push(url)
    }
    return urls
  }
  // $Number$: the segments the output holds, from startNumber on, as many as the timeline says when it has one.
  const count = times ? times.length : memberCount
  for (let number = startNumber; urls.length < count; number++) {
    const reference = expandTemplate(media, { ...ids, Number: number })
    const url = reference === null ? null : resolveUrl(reference)
    if (url === null) break
    urls.push(url)
  }
  return urls.length === 0 || (times !== null && urls.length !== times.length) ? null : urls
}

const TEMPLATE = /<SegmentTemplate\b([^>]*?)(?:\/>|>([\s\S]*?)<\/SegmentTemplate>)/

/** One Representation's SegmentTemplate as a SegmentList of URLs; the block unchanged when it cannot be. */
function rewriteRepresentation(block: string, open: string, resolveUrl: (reference: string) => string | null, memberCount: number): string {
  const template = TEMPLATE.exec(block)
  if (!template) return block
  const attributes = template[1] as string
  const inner = template[2] ?? ''
  const ids = { RepresentationID: attribute(open, 'id') ?? '', Bandwidth: attribute(open, 'bandwidth') ?? '' }
  const media = attribute(attributes, 'media')
  if (media === null) return block
  const timeline = /<SegmentTimeline>[\s\S]*?<\/SegmentTimeline>/.exec(inner)?.[0] ?? null
  const times = timeline === null ? null : timelineTimes(timeline)
  if (timeline !== null && times === null) return block
  const startNumber = Number(attribute(attributes, 'startNumber') ?? '1')
  const urls = segmentUrls(media, ids, startNumber, times, resolveUrl, memberCount)
  const initialization = attribute(attributes, 'initialization')
  const initReference = initialization === null ? null : expandTemplate(initialization, ids)
  const initUrl = initReference === null ? null : resolveUrl(initReference)
  if (!urls || (initialization !== null && initUrl === null)) return block
  const timescale = attribute(attributes, 'timescale')
  const duration = attribute(attributes, 'duration') ?? /<S\b[^>]*\bd="(\d+)"/.exec(timeline ?? '')?.[1] ?? null
  // No startNumber: it only numbers a template's names, and FFmpeg's demuxer would read a list's first segment as number 1 of 0…n-1 and skip it.
  const listAttributes = [timescale && `timescale="${escapeXml(timescale)}"`, duration && `duration="${escapeXml(duration)}"`].filter(Boolean).join(' ')
  const list = [
    `<SegmentList ${listAttributes}>`,
    ...(initUrl ? [`<Initialization sourceURL="${escapeXml(initUrl)}"/>`] : []),
    ...(timeline ? [timeline] : []),
    ...urls.map((url) => `<SegmentURL media="${escapeXml(url)}"/>`),
    '</SegmentList>',
  ].join('\n')
  return block.replace(template[0], list)
}

/**
 * A DASH manifest with each Representation's SegmentTemplate replaced by a
 * SegmentList of its members' URLs; unchanged when it has a BaseURL (its
 * names then resolve against a location this module does not know).
 */
export function rewriteDash(text: string, manifestPath: string, urlOf: MemberUrl, memberCount: number): string {
  if (/<BaseURL\b/.test(text)) return text
  const resolveUrl = (reference: string) => {
    const member = resolveReference(manifestPath, reference)
    return member === null ? null : urlOf(member)
  }
  return text.replace(/(<Representation\b([^>]*[^/])>)([\s\S]*?<\/Representation>)/g, (_whole, open: string, openAttributes: string, rest: string) => open + rewriteRepresentation(rest, openAttributes, resolveUrl, memberCount))
}
