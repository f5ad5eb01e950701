import t from 'tap'
import {
  normalizeEndpointUrl,
  normalizePrefix,
  normalizePublicBaseUrl,
  validateBucket,
  validateRegion,
} from '../../api/storage-destinations/destination-rules.js'
import { maskAccessKeyId } from '../../api/storage-destinations/storage-destination-repository.js'

t.test('endpoint_url keeps https origins and refuses raw IPs even when private networks are allowed', async (t) => {
  const cases: Array<[string, boolean, string | RegExp]> = [
    ['https://s3.eu-west-1.amazonaws.com', false, 'https://s3.eu-west-1.amazonaws.com'],
    ['https://ACCOUNT.r2.cloudflarestorage.com/', false, 'https://account.r2.cloudflarestorage.com'],
    ['https://minio.example.com:9000', false, 'https://minio.example.com:9000'],
    ['http://minio.example.com', false, /must use https/],
    ['http://minio.internal:9000', true, 'http://minio.internal:9000'],
    ['https://localhost:9000', false, /must not name this machine/],
    ['http://localhost:9000', true, 'http://localhost:9000'],
    ['https://10.0.0.5', true, /raw IP/],
    ['https://[::1]:9000', true, /raw IP/],
    ['https://0x7f.1', true, /raw IP/],
    ['https://2130706433', true, /raw IP/],
    ['https://s3.example.com/path', false, /no path/],
    ['https://s3.example.com?x=1', false, /no path, query/],
    ['ftp://s3.example.com', false, /must use https/],
    ['s3.example.com', false, /absolute URL/],
  ]
  for (const [input, allowPrivate, expected] of cases) {
    if (typeof expected === 'string') t.equal(normalizeEndpointUrl(input, allowPrivate), expected, input)
    else t.throws(() => normalizeEndpointUrl(input, allowPrivate), { statusCode: 422, message: expected }, input)
  }
})

t.test('bucket names follow the S3 naming rules', async (t) => {
  for (const ok of ['abc', 'my-bucket.v2', 'a'.repeat(63), '1bucket']) t.equal(validateBucket(ok), ok, ok)
  for (const bad of ['ab', 'a'.repeat(64), 'Bucket', 'my_bucket', '-bucket', 'bucket-', 'a..b', '10.0.0.1', 'xn--abc', 'sthree-x', 'abc-s3alias', 'abc--ol-s3']) {
    t.throws(() => validateBucket(bad), { statusCode: 422, message: /^bucket: / }, bad)
  }
})

t.test('prefixes lose outer slashes and refuse ambiguous segments', async (t) => {
  const cases: Array<[string, string | RegExp]> = [
    ['', ''],
    ['/', ''],
    ['///exports/', 'exports'],
    ['/a/b/c/', 'a/b/c'],
    ['a//b', /empty/],
    ['a/./b', /"\."/],
    ['../up', /"\.\."/],
    ['tab\there', /control/],
    ['x'.repeat(513), /at most 512/],
  ]
  for (const [input, expected] of cases) {
    if (typeof expected === 'string') t.equal(normalizePrefix(input), expected, JSON.stringify(input))
    else t.throws(() => normalizePrefix(input), { statusCode: 422, message: expected }, JSON.stringify(input))
  }
})

t.test('regions and public base URLs', async (t) => {
  t.equal(validateRegion('auto'), 'auto')
  t.equal(validateRegion('us-east-1'), 'us-east-1')
  t.throws(() => validateRegion('us east'), { message: /^region: / })
  t.equal(normalizePublicBaseUrl('https://cdn.example.com/media/'), 'https://cdn.example.com/media')
  t.equal(normalizePublicBaseUrl('http://cdn.example.com'), 'http://cdn.example.com')
  t.throws(() => normalizePublicBaseUrl('javascript:alert(1)'), { message: /^public_base_url: / })
  t.throws(() => normalizePublicBaseUrl('https://cdn.example.com/?sig=1'), { message: /no query/ })
})

t.test('access key ids are masked to their first and last four characters', async (t) => {
  t.equal(maskAccessKeyId('AKIAIOSFODNN7EXAMPLE'), 'AKIA…MPLE')
  t.equal(maskAccessKeyId('minioadmin'), 'mini…dmin')
  t.notOk(maskAccessKeyId('short').includes('short'), 'a short id is not shown whole')
  t.notOk(maskAccessKeyId('12345678').includes('1234'), 'eight characters show at most the last two')
  t.equal(maskAccessKeyId('\u{1F511}KEY-0123456789-\u{1F511}\u{1F512}'), '\u{1F511}KEY…9-\u{1F511}\u{1F512}', 'a character outside the BMP is never cut in half')
})
