/**
 * DASH manifests read as FFmpeg's DASH demuxer reads them through libxml2
 * (contracts/dash-manifest.ts), and judged by the run phase's rule
 * (dashManifestProblem) and the folder's (dashProblems).
 */
import t from 'tap'
import { readMpd } from '../../contracts/dash-manifest.js'
import { dashProblems } from '../../contracts/media-lists.js'
import { dashManifestProblem } from '../../contracts/work-file-content.js'

/** A manifest of one Representation around `inner`, with `top` at the MPD level. */
function mpd(inner: string, top = '', representation = 'id="0" bandwidth="84568"'): string {
  return `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" mediaPresentationDuration="PT2.0S">
  ${top}
  <Period id="0" start="PT0.0S">
    <AdaptationSet id="0" contentType="video">
      <Representation ${representation} mimeType="video/mp4" codecs="avc1.64000a">
        ${inner}
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>
`
}
const TEMPLATE = '<SegmentTemplate timescale="10240" initialization="init-stream$RepresentationID$.m4s" media="chunk-stream$RepresentationID$-$Number%05d$.m4s" startNumber="1"><SegmentTimeline><S t="0" d="20480" /></SegmentTimeline></SegmentTemplate>'
const LIST = '<SegmentList duration="1"><Initialization sourceURL="seg/init.mp4"/><SegmentURL media="seg/1.m4s"/><SegmentURL media="seg/2.m4s"/></SegmentList>'

// [name, manifest, expected problem (null: accepted)]
const manifests: Array<[string, string, RegExp | null]> = [
  ['the manifest FFmpeg\'s dash muxer writes (templates)', mpd(TEMPLATE), null],
  ['a segment list under a relative BaseURL', mpd(LIST, '<BaseURL>media/</BaseURL>'), null],
  ['an empty BaseURL, comments, a BOM', `\u00ef\u00bb\u00bf<!-- made by hand -->${mpd(`<!-- segments -->${TEMPLATE}`, '<BaseURL></BaseURL>')}`, null],
  ['a BaseURL at file:///etc/passwd', mpd(TEMPLATE, '<BaseURL>file:///etc/passwd</BaseURL>'), /line 3: "file:\/\/\/etc\/passwd" protocols and URLs are not allowed/],
  ['a BaseURL climbing out with ../', mpd(TEMPLATE, '<BaseURL>../</BaseURL>'), /"\.\.\/" each part/],
  ['an absolute BaseURL', mpd(TEMPLATE, '<BaseURL>/etc/</BaseURL>'), /"\/etc\/" absolute paths/],
  ['an http BaseURL', mpd(TEMPLATE, '<BaseURL>http://169.254.169.254/latest/</BaseURL>'), /protocols and URLs/],
  ['a BaseURL in lower case (FFmpeg ignores case)', mpd(TEMPLATE, '<baseurl>file:///etc/</baseurl>'), /protocols and URLs/],
  ['a BaseURL with a namespace prefix', mpd(TEMPLATE, '<d:BaseURL xmlns:d="urn:mpeg:dash:schema:mpd:2011">/etc/</d:BaseURL>'), /absolute paths/],
  ['a BaseURL at the Representation level', mpd(`<BaseURL>/var/</BaseURL>${TEMPLATE}`), /line 7: "\/var\/" absolute/],
  ['a BaseURL spelled with character references', mpd(TEMPLATE, '<BaseURL>&#x2e;&#46;/</BaseURL>'), /"\.\.\/" each part/],
  ['a BaseURL split by a comment', mpd(TEMPLATE, '<BaseURL>fi<!-- -->le:///etc/</BaseURL>'), /a comment or processing instruction inside <BaseURL>/],
  ['a BaseURL in a CDATA section', mpd(TEMPLATE, '<BaseURL><![CDATA[file:///etc/]]></BaseURL>'), /CDATA section/],
  ['a DOCTYPE declaring an entity', `<?xml version="1.0"?><!DOCTYPE MPD [<!ENTITY b "file:///etc/">]>${mpd(TEMPLATE, '<BaseURL>&b;</BaseURL>').replace(/^<\?xml[^>]*>/, '')}`, /DOCTYPE/],
  ['an undeclared entity', mpd(TEMPLATE, '<BaseURL>&b;</BaseURL>'), /entity other than the five XML ones/],
  ['an absolute media template', mpd('<SegmentTemplate media="/etc/passwd" initialization="init.m4s"/>'), /"\/etc\/passwd" absolute/],
  ['an initialization climbing out', mpd('<SegmentTemplate media="c-$Number$.m4s" initialization="../../secret.mp4"/>'), /"\.\.\/\.\.\/secret\.mp4" each part/],
  ['a segment URL naming the concat protocol', mpd('<SegmentList><SegmentURL media="concat:a.m4s|/etc/passwd"/></SegmentList>'), /protocols and URLs/],
  ['an Initialization sourceURL at a host path', mpd('<SegmentList><Initialization sourceURL="/etc/passwd"/><SegmentURL media="a.m4s"/></SegmentList>'), /absolute/],
  ['a media attribute behind a prefix (xmlGetProp ignores it)', mpd('<SegmentTemplate x:media="/etc/passwd" xmlns:x="urn:x"/>'), /absolute/],
  ['a Representation id that climbs (it fills $RepresentationID$)', mpd(TEMPLATE, '', 'id="../../etc" bandwidth="1"'), /"\.\.\/\.\.\/etc" is a Representation id/],
  ['a Representation bandwidth that is a path (it fills $Bandwidth$)', mpd('<SegmentTemplate media="$Bandwidth$/c-$Number$.m4s"/>', '', 'id="0" bandwidth="/etc"'), /is a Representation bandwidth/],
  ['an unknown template identifier', mpd('<SegmentTemplate media="c-$Path$.m4s"/>'), /each part/],
  ['a UTF-16 manifest', `\u00ff\u00fe${mpd(TEMPLATE)}`, /not UTF-8 or ASCII text/],
  ['a manifest declaring UTF-16', mpd(TEMPLATE).replace('utf-8', 'UTF-16'), /declares the encoding "UTF-16"/],
  ['a declaration hiding its encoding behind a "?"', mpd(TEMPLATE).replace('<?xml version="1.0" encoding="utf-8"?>', '<?xml version="1.0?" encoding="UTF-16"?>'), /declares the encoding "UTF-16"/],
  ['an element inside a BaseURL', mpd(TEMPLATE, '<BaseURL>a/<b/></BaseURL>'), /an element inside <BaseURL>/],
  ['an end tag that closes the wrong element', mpd(TEMPLATE).replace('</Period>', '</AdaptationSet>'), /does not close the open element/],
  ['a text that is no manifest', 'ffconcat version 1.0\nfile /etc/passwd\n', /not a DASH manifest/],
]

for (const [name, text, expected] of manifests) {
  t.test(`${expected === null ? 'accepts' : 'refuses'} ${name}`, async (t) => {
    const why = dashManifestProblem(text)
    if (expected === null) t.equal(why, null)
    else t.match(why, expected)
  })
}

t.test('reads attributes as libxml2 gives them: entities decoded, line breaks as spaces, the line of the start tag', async (t) => {
  const reading = readMpd('<MPD a="x&amp;y" b=\'1\n2\'>\n  <BaseURL>a&lt;b</BaseURL>\n</MPD>')
  t.same(reading, {
    ok: true,
    elements: [
      { name: 'MPD', line: 1, attributes: [{ name: 'a', value: 'x&y' }, { name: 'b', value: '1 2' }], text: '' },
      { name: 'BaseURL', line: 3, attributes: [], text: 'a<b' },
    ],
  })
  t.match(readMpd('<MPD><Period></MPD>'), { ok: false, reason: /does not close/ })
  t.match(readMpd('<MPD/><MPD/>'), { ok: false, reason: /more than one root/ })
  t.match(readMpd('<MPD a="1" a="2"/>'), { ok: false, reason: /repeats the attribute a/ })
})

t.test('the folder check reads a manifest with the same reader, by the folder\'s rule', async (t) => {
  t.same(dashProblems(mpd(TEMPLATE, '<BaseURL>media/</BaseURL>')), [])
  t.same(dashProblems(mpd(TEMPLATE, '<BASEURL>file:///etc/</BASEURL>')).map((p) => [p.line, p.entry]), [[3, 'file:///etc/']])
  t.match(dashProblems(mpd(TEMPLATE, '<BaseURL><![CDATA[/etc/]]></BaseURL>')), [{ line: 3, entry: '', reason: /CDATA/ }])
})
