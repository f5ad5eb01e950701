import t from 'tap'
import { checkUrl, classifyAddress } from '../../contracts/url-guard.js'

const forbidden: Array<[string, RegExp]> = [
  ['127.0.0.1', /loopback/],
  ['127.255.255.254', /loopback/],
  ['10.1.2.3', /private/],
  ['172.16.0.1', /private/],
  ['172.31.255.255', /private/],
  ['192.168.1.1', /private/],
  ['169.254.169.254', /linkLocal/],
  ['169.254.0.1', /linkLocal/],
  ['100.64.0.1', /carrierGradeNat/],
  ['100.127.255.254', /carrierGradeNat/],
  ['0.0.0.0', /unspecified/],
  ['0.1.2.3', /unspecified/],
  ['255.255.255.255', /broadcast/],
  ['224.0.0.1', /multicast/],
  ['239.255.255.250', /multicast/],
  ['192.0.2.10', /reserved/],
  ['198.51.100.1', /reserved/],
  ['203.0.113.7', /reserved/],
  ['198.18.0.1', /reserved/],
  ['240.0.0.1', /reserved/],
  ['::1', /loopback/],
  ['::', /unspecified/],
  ['[::]', /unspecified/],
  ['::ffff:127.0.0.1', /embeds 127.0.0.1 is a loopback/],
  ['::ffff:7f00:1', /embeds 127.0.0.1/],
  ['::ffff:a9fe:a9fe', /embeds 169.254.169.254/],
  ['::ffff:0:a00:1', /embeds 10.0.0.1/],
  ['::127.0.0.1', /embeds 127.0.0.1/],
  ['64:ff9b::a9fe:a9fe', /embeds 169.254.169.254/],
  ['64:ff9b::10.0.0.1', /embeds 10.0.0.1/],
  ['64:ff9b:1::1', /rfc6052/],
  ['2002:7f00:1::1', /6to4.*127.0.0.1/],
  ['2002:c0a8:101::1', /6to4.*192.168.1.1/],
  ['fd00::1', /uniqueLocal/],
  ['fd00:ec2::254', /uniqueLocal/],
  ['fc00::1', /uniqueLocal/],
  ['fe80::1', /linkLocal/],
  ['fe80::1%eth0', /local interface/],
  ['fec0::1', /deprecatedSiteLocal/],
  ['ff02::1', /multicast/],
  ['2001:db8::1', /reserved/],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /teredo/],
  ['not-an-ip', /not an IP address/],
  ['0177.0.0.1', /not an IP address/],
  ['2130706433', /not an IP address/],
]

const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450:4001:81c::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']

t.test('forbids addresses inside the network', async (t) => {
  t.ok(forbidden.length >= 25)
  for (const [address, reason] of forbidden) {
    const verdict = classifyAddress(address)
    t.ok(verdict.forbidden, `${address} is forbidden`)
    if (verdict.forbidden) t.match(verdict.reason, reason, `${address}: reason`)
  }
})

t.test('allows public unicast addresses, also when embedded in IPv6', async (t) => {
  for (const address of allowed) t.same(classifyAddress(address), { forbidden: false }, address)
})

const urls: Array<[string, string, string | RegExp]> = [
  ['a decimal host', 'http://2130706433/x', /127.0.0.1 is a loopback/],
  ['an octal host', 'http://0177.0.0.1/x', /127.0.0.1 is a loopback/],
  ['a hex short host', 'http://0x7f.1/x', /127.0.0.1/],
  ['a short dotted host', 'http://127.1/x', /127.0.0.1/],
  ['a percent-encoded host', 'http://%31%32%37.0.0.1/', /127.0.0.1/],
  ['a bare zero host', 'http://0/', /0.0.0.0 is a unspecified/],
  ['a bracketed mapped IPv6 host', 'http://[::ffff:127.0.0.1]:8080/', /embeds 127.0.0.1/],
  ['the IPv6 unspecified host', 'http://[::]/', /unspecified/],
  ['the metadata service', 'http://169.254.169.254/latest/meta-data/', /linkLocal/],
  ['the IPv6 metadata service', 'http://[fd00:ec2::254]/', /uniqueLocal/],
]

t.test('judges literal hosts after WHATWG URL normalisation', async (t) => {
  for (const [name, url, reason] of urls) {
    const verdict = checkUrl(url, { allowPrivateNetworks: false })
    t.notOk(verdict.ok, name)
    if (!verdict.ok) {
      t.equal(verdict.code, 'FORBIDDEN_ADDRESS', `${name}: code`)
      t.match(verdict.reason, reason, `${name}: reason`)
    }
  }
})

t.test('refuses URLs that are not plain http(s)', async (t) => {
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://example.com/', 'data:text/plain,hi', 'javascript:alert(1)', 'not a url', 'http://user:pw@example.com/']) {
    const verdict = checkUrl(url, { allowPrivateNetworks: false })
    t.notOk(verdict.ok, url)
    if (!verdict.ok) t.equal(verdict.code, 'INVALID_URL', url)
  }
})

t.test('lets literal private hosts through when private networks are allowed', async (t) => {
  const verdict = checkUrl('http://127.0.0.1:9/x', { allowPrivateNetworks: true })
  t.ok(verdict.ok)
  if (verdict.ok) t.equal(verdict.literalAddress, '127.0.0.1')
})

t.test('leaves host names to the resolver', async (t) => {
  const verdict = checkUrl('https://localhost/x', { allowPrivateNetworks: false })
  t.ok(verdict.ok)
  if (verdict.ok) {
    t.equal(verdict.host, 'localhost')
    t.equal(verdict.literalAddress, null)
  }
})
