import t from 'tap'
import { addressKey } from '../../api/console/sign-in-throttle.js'

t.test('a client address is counted as itself (IPv4) or by its /64 (IPv6), as a NATS KV key token', async (t) => {
  const cases: Array<[string | undefined, string]> = [
    ['203.0.113.7', 'ipv4_203.0.113.7'],
    ['::ffff:203.0.113.7', 'ipv4_203.0.113.7'],
    ['::FFFF:127.0.0.1', 'ipv4_127.0.0.1'],
    ['2001:db8:1:2::1', 'ipv6_2001_db8_1_2/64'],
    ['2001:0db8:0001:0002:ffff:ffff:ffff:ffff', 'ipv6_2001_db8_1_2/64'],
    ['2001:db8::1', 'ipv6_2001_db8_0_0/64'],
    ['::1', 'ipv6_0_0_0_0/64'],
    ['::', 'ipv6_0_0_0_0/64'],
    ['fe80::1%eth0', 'ipv6_fe80_0_0_0/64'],
    ['64:ff9b::192.0.2.1', 'ipv6_64_ff9b_0_0/64'],
    ['1:2:3:4:5:6:7::', 'ipv6_1_2_3_4/64'],
    [undefined, 'unknown'],
    ['', 'unknown'],
  ]
  for (const [ip, key] of cases) {
    t.equal(addressKey(ip), key, String(ip))
    t.match(addressKey(ip), /^[-/=.\w]+$/, 'only characters a KV key may hold')
  }
})
