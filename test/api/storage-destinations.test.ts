import t from 'tap'
import { startApi } from '../harness/api.js'
import { startS3 } from '../harness/s3.js'

const SECRET = 'wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY'
const SESSION = 'session-token-that-must-never-be-shown'

t.test('storage destinations', async (t) => {
  const s3 = await startS3(t)
  const managed = s3.client()
  t.teardown(() => managed.destroy())
  const api = await startApi(t, { allowPrivateNetworks: true, s3: managed, s3Bucket: s3.bucket })
  // The customer's bucket, apart from the managed one.
  const customerBucket = await s3.createBucket('customer-bucket')
  // Raw IP endpoints are always refused, so the tests reach the S3 server by name.
  const endpoint = s3.endpoint.replace('127.0.0.1', 'localhost')
  const business = await api.createAccount('business')
  const other = await api.createAccount('business')
  const growth = await api.createAccount('growth')

  const call = (key: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    api.app.inject({ method, url: `/api/v1/storage-destinations${url}`, headers: { 'x-api-key': key }, ...(payload ? { payload } : {}) })

  const validBody = (overrides: Record<string, unknown> = {}) => ({
    name: `dest-${Math.random().toString(16).slice(2)}`,
    endpoint_url: endpoint,
    region: 'us-east-1',
    bucket: customerBucket,
    prefix: '/exports/videos/',
    path_style: true,
    credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
    ...overrides,
  })

  const create = async (key = business.api_key, overrides: Record<string, unknown> = {}) => {
    const res = await call(key, 'POST', '', validBody(overrides))
    if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`)
    return res.json()
  }

  const allBodies: string[] = []
  const record = <T extends { body: string }>(res: T): T => {
    allBodies.push(res.body)
    return res
  }

  t.test('creates a destination, normalises the prefix and shows only a masked access key id', async (t) => {
    const res = record(
      await call(business.api_key, 'POST', '', validBody({ credentials: { access_key_id: 'AKIAIOSFODNN7EXAMPLE', secret_access_key: SECRET, session_token: SESSION } })),
    )
    t.equal(res.statusCode, 201)
    const body = res.json()
    t.match(body.storage_destination_id, /^sd_[0-9a-f]{32}$/)
    t.equal(body.prefix, 'exports/videos')
    t.equal(body.endpoint_url, endpoint)
    t.equal(body.path_style, true)
    t.equal(body.public_base_url, null)
    t.equal(body.is_active, true)
    t.equal(body.disabled_at, null)
    t.same(body.credentials, { access_key_id_masked: 'AKIA…MPLE' })
    t.notOk(res.body.includes(SECRET))
    t.notOk(res.body.includes(SESSION))
    t.notOk(res.body.includes('AKIAIOSFODNN7EXAMPLE'))
  })

  t.test('stores the credentials sealed, never in clear', async (t) => {
    const { storage_destination_id } = await create(business.api_key, {
      credentials: { access_key_id: 'AKIASEALEDCHECK00000', secret_access_key: SECRET, session_token: SESSION },
    })
    const stored = await api.db.collection('storage_destinations').findOne({ _id: storage_destination_id })
    const raw = JSON.stringify(stored)
    t.notOk(raw.includes(SECRET))
    t.notOk(raw.includes(SESSION))
  })

  t.test('path_style defaults to false and public_base_url loses its trailing slash', async (t) => {
    const res = record(await call(business.api_key, 'POST', '', validBody({ path_style: undefined, public_base_url: 'https://cdn.example.com/media/' })))
    t.equal(res.statusCode, 201)
    t.equal(res.json().path_style, false)
    t.equal(res.json().public_base_url, 'https://cdn.example.com/media')
  })

  t.test('refuses another destination with an active name of the account with 409 CONFLICT', async (t) => {
    const first = await create()
    const res = await call(business.api_key, 'POST', '', validBody({ name: first.name }))
    t.equal(res.statusCode, 409)
    t.equal(res.json().error, 'CONFLICT')
    t.match(res.json().message, /^(body\.)?name: /)
    const otherAccount = await call(other.api_key, 'POST', '', validBody({ name: first.name }))
    t.equal(otherAccount.statusCode, 201, 'names are unique per account only')
  })

  t.test('frees the name of a disabled destination', async (t) => {
    const first = await create()
    t.equal((await call(business.api_key, 'DELETE', `/${first.storage_destination_id}`)).statusCode, 200)
    t.equal((await call(business.api_key, 'POST', '', validBody({ name: first.name }))).statusCode, 201)
  })

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a missing name', { name: undefined }, /body\.name is required/],
    ['a missing credentials object', { credentials: undefined }, /body\.credentials is required/],
    ['credentials without a secret', { credentials: { access_key_id: 'AKIA1234' } }, /body\.credentials\.secret_access_key is required/],
    ['a raw IPv4 endpoint', { endpoint_url: 'https://192.0.2.10' }, /^(body\.)?endpoint_url: .*raw IP/],
    ['a raw IPv6 endpoint', { endpoint_url: 'https://[2001:db8::1]:9000' }, /^(body\.)?endpoint_url: .*raw IP/],
    ['an integer IPv4 endpoint', { endpoint_url: 'https://3221225994' }, /^(body\.)?endpoint_url: .*raw IP/],
    ['an endpoint that is not a URL', { endpoint_url: 'not a url' }, /^(body\.)?endpoint_url: must be an absolute URL/],
    ['an endpoint with a path', { endpoint_url: 'https://s3.example.com/bucket' }, /^(body\.)?endpoint_url: must have no path/],
    ['an endpoint with credentials', { endpoint_url: 'https://user:pw@s3.example.com' }, /^(body\.)?endpoint_url: must not contain credentials/],
    ['a bucket with capitals', { bucket: 'My_Bucket' }, /^(body\.)?bucket: /],
    ['a bucket shaped like an IP address', { bucket: '192.168.1.1' }, /^(body\.)?bucket: must not look like an IP/],
    ['a bucket with adjacent dots', { bucket: 'a..b' }, /^(body\.)?bucket: must not contain two adjacent dots/],
    ['a region with spaces', { region: 'us east' }, /^(body\.)?region: /],
    ['a prefix with a .. segment', { prefix: 'a/../b' }, /^(body\.)?prefix: /],
    ['a public_base_url that is not http(s)', { public_base_url: 'ftp://cdn.example.com' }, /^(body\.)?public_base_url: /],
  ]
  for (const [what, overrides, message] of invalid) {
    t.test(`rejects ${what} with 422 VALIDATION_ERROR`, async (t) => {
      const res = record(await call(business.api_key, 'POST', '', validBody(overrides)))
      t.equal(res.statusCode, 422)
      t.equal(res.json().error, 'VALIDATION_ERROR')
      t.match(res.json().message, message)
    })
  }

  t.test('rejects an http:// endpoint and a localhost endpoint unless private networks are allowed', async (t) => {
    const strict = await startApi(t, { s3: managed, s3Bucket: s3.bucket })
    const account = await strict.createAccount('business')
    const post = (endpoint_url: string) =>
      strict.app.inject({ method: 'POST', url: '/api/v1/storage-destinations', headers: { 'x-api-key': account.api_key }, payload: validBody({ endpoint_url }) })
    const http = await post('http://s3.example.com')
    t.equal(http.statusCode, 422)
    t.equal(http.json().message, 'endpoint_url: must use https://')
    const local = await post('https://localhost:9000')
    t.equal(local.statusCode, 422)
    t.match(local.json().message, /^endpoint_url: must not name this machine/)
    // A trailing dot is the same name to DNS.
    for (const endpoint of ['https://localhost.', 'https://a.localhost.', 'https://LOCALHOST.:9000']) {
      const dotted = await post(endpoint)
      t.equal(dotted.statusCode, 422, endpoint)
      t.match(dotted.json().message, /^endpoint_url: must not name this machine/, endpoint)
    }
    t.equal((await post('https://s3.example.com')).statusCode, 201)
  })

  t.test('lists only the account’s own destinations, newest first, echoing limit and offset', async (t) => {
    const lister = await api.createAccount('business')
    const a = await create(lister.api_key)
    const b = await create(lister.api_key)
    const res = record(await call(lister.api_key, 'GET', '?limit=10&offset=0'))
    t.equal(res.statusCode, 200)
    const body = res.json()
    t.equal(body.limit, 10)
    t.equal(body.offset, 0)
    t.same(
      body.storage_destinations.map((d: { storage_destination_id: string }) => d.storage_destination_id),
      [b.storage_destination_id, a.storage_destination_id],
    )
    const paged = await call(lister.api_key, 'GET', '?limit=1&offset=1')
    t.same(paged.json().storage_destinations.map((d: { storage_destination_id: string }) => d.storage_destination_id), [a.storage_destination_id])
    t.equal((await call(lister.api_key, 'GET', '?limit=101')).statusCode, 400)
    t.equal((await call(lister.api_key, 'GET', '?offset=-1')).statusCode, 400)
  })

  t.test('gets a destination by id', async (t) => {
    const created = await create()
    const res = record(await call(business.api_key, 'GET', `/${created.storage_destination_id}`))
    t.equal(res.statusCode, 200)
    t.same(res.json(), created)
  })

  t.test('answers 404 for a missing, malformed or other account’s destination on every route', async (t) => {
    const theirs = await create(other.api_key)
    const ids = [theirs.storage_destination_id, `sd_${'0'.repeat(32)}`, 'sd_not-an-id']
    for (const id of ids) {
      for (const [method, suffix, payload] of [
        ['GET', '', undefined],
        ['PATCH', '', { name: 'x' }],
        ['DELETE', '', undefined],
        ['POST', '/test', undefined],
      ] as const) {
        const res = await call(business.api_key, method, `/${id}${suffix}`, payload)
        t.equal(res.statusCode, 404, `${method} ${id}${suffix}`)
        t.equal(res.json().error, 'NOT_FOUND')
      }
    }
    const still = await call(other.api_key, 'GET', `/${theirs.storage_destination_id}`)
    t.equal(still.json().is_active, true, 'the owner’s destination is untouched')
  })

  t.test('gates every route behind the Business plan with 403 FORBIDDEN', async (t) => {
    const mine = await create()
    for (const plan of ['free', 'trial', 'growth'] as const) {
      const account = plan === 'growth' ? growth : await api.createAccount(plan)
      for (const [method, url, payload] of [
        ['GET', '', undefined],
        ['POST', '', validBody()],
        ['POST', '', {}],
        ['GET', `/${mine.storage_destination_id}`, undefined],
        ['PATCH', `/${mine.storage_destination_id}`, { name: 'x' }],
        ['DELETE', `/${mine.storage_destination_id}`, undefined],
        ['POST', `/${mine.storage_destination_id}/test`, undefined],
      ] as const) {
        const res = await call(account.api_key, method, url, payload)
        t.equal(res.statusCode, 403, `${plan}: ${method} ${url}`)
        t.equal(res.json().error, 'FORBIDDEN')
      }
    }
  })

  t.test('updates the mutable fields and keeps the rest', async (t) => {
    const created = await create()
    const res = record(
      await call(business.api_key, 'PATCH', `/${created.storage_destination_id}`, {
        name: 'renamed',
        prefix: '//new/prefix//',
        public_base_url: 'https://cdn.example.org',
        path_style: false,
        credentials: { access_key_id: 'AKIANEWKEY0000001234', secret_access_key: SECRET },
      }),
    )
    t.equal(res.statusCode, 200)
    const body = res.json()
    t.equal(body.name, 'renamed')
    t.equal(body.prefix, 'new/prefix')
    t.equal(body.public_base_url, 'https://cdn.example.org')
    t.equal(body.path_style, false)
    t.same(body.credentials, { access_key_id_masked: 'AKIA…1234' })
    t.equal(body.endpoint_url, created.endpoint_url)
    t.equal(body.bucket, created.bucket)
    t.notOk(res.body.includes(SECRET))
    const cleared = await call(business.api_key, 'PATCH', `/${created.storage_destination_id}`, { public_base_url: null })
    t.equal(cleared.json().public_base_url, null)
  })

  for (const field of ['endpoint_url', 'region', 'bucket']) {
    t.test(`refuses to change ${field} with 422 naming the field`, async (t) => {
      const created = await create()
      const res = await call(business.api_key, 'PATCH', `/${created.storage_destination_id}`, { name: 'fine', [field]: 'other-value' })
      t.equal(res.statusCode, 422)
      t.equal(res.json().error, 'VALIDATION_ERROR')
      t.match(res.json().message, new RegExp(`^(body\\.)?${field}: cannot be changed`))
      t.equal((await call(business.api_key, 'GET', `/${created.storage_destination_id}`)).json().name, created.name, 'nothing changed')
    })
  }

  t.test('rejects an empty PATCH and invalid values with 422', async (t) => {
    const created = await create()
    const empty = await call(business.api_key, 'PATCH', `/${created.storage_destination_id}`, {})
    t.equal(empty.statusCode, 422)
    t.match(empty.json().message, /^body: /)
    const badPrefix = await call(business.api_key, 'PATCH', `/${created.storage_destination_id}`, { prefix: 'a//b' })
    t.equal(badPrefix.statusCode, 422)
    t.match(badPrefix.json().message, /^(body\.)?prefix: /)
  })

  t.test('renaming onto another active destination’s name is 409', async (t) => {
    const a = await create()
    const b = await create()
    const res = await call(business.api_key, 'PATCH', `/${b.storage_destination_id}`, { name: a.name })
    t.equal(res.statusCode, 409)
  })

  t.test('DELETE disables the destination, keeps it listed and is idempotent', async (t) => {
    const created = await create()
    const res = record(await call(business.api_key, 'DELETE', `/${created.storage_destination_id}`))
    t.equal(res.statusCode, 200)
    t.equal(res.json().is_active, false)
    t.type(res.json().disabled_at, 'string')
    const again = await call(business.api_key, 'DELETE', `/${created.storage_destination_id}`)
    t.equal(again.statusCode, 200)
    t.equal(again.json().disabled_at, res.json().disabled_at)
    const fetched = await call(business.api_key, 'GET', `/${created.storage_destination_id}`)
    t.equal(fetched.json().is_active, false)
  })

  t.test('the connection test writes, reads back and deletes an object in the real bucket', async (t) => {
    const created = await create()
    const res = record(await call(business.api_key, 'POST', `/${created.storage_destination_id}/test`))
    t.equal(res.statusCode, 200)
    t.same(res.json(), { ok: true })
    const { ListObjectsV2Command } = await import('@aws-sdk/client-s3')
    const client = s3.client()
    const listed = await client.send(new ListObjectsV2Command({ Bucket: customerBucket, Prefix: 'exports/videos/' }))
    client.destroy()
    t.equal(listed.KeyCount ?? 0, 0, 'the temporary object is gone')
  })

  t.test('a failed connection test answers 200 ok:false with a safe message', async (t) => {
    const wrongSecret = await create(business.api_key, { credentials: { access_key_id: s3.accessKeyId, secret_access_key: `${SECRET}-wrong` } })
    const res = record(await call(business.api_key, 'POST', `/${wrongSecret.storage_destination_id}/test`))
    t.equal(res.statusCode, 200)
    t.equal(res.json().ok, false)
    t.equal(res.json().error, 'could not write the test object: SignatureDoesNotMatch')
    t.notOk(res.body.includes(s3.accessKeyId))

    const missingBucket = await create(business.api_key, { bucket: 'no-such-bucket-here' })
    const nb = await call(business.api_key, 'POST', `/${missingBucket.storage_destination_id}/test`)
    t.same(nb.json(), { ok: false, error: 'could not write the test object: NoSuchBucket' })

    const closedPort = await create(business.api_key, { endpoint_url: 'http://localhost:1' })
    const cp = record(await call(business.api_key, 'POST', `/${closedPort.storage_destination_id}/test`))
    t.same(cp.json(), { ok: false, error: 'could not write the test object: the endpoint could not be reached' })
  })

  t.test('the connection test refuses an endpoint resolving to loopback without ALLOW_PRIVATE_NETWORKS', async (t) => {
    const strict = await startApi(t, { s3: managed, s3Bucket: s3.bucket })
    const account = await strict.createAccount('business')
    // localhost is refused at creation without ALLOW_PRIVATE_NETWORKS, so plant the destination directly.
    const doc = await strict.app.storageDestinations.create(account.account_id, {
      name: 'loopback',
      endpoint_url: endpoint,
      region: 'us-east-1',
      bucket: customerBucket,
      prefix: '',
      public_base_url: null,
      path_style: true,
      credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
    })
    const res = await strict.app.inject({
      method: 'POST',
      url: `/api/v1/storage-destinations/${doc._id}/test`,
      headers: { 'x-api-key': account.api_key },
    })
    t.same(res.json(), { ok: false, error: 'endpoint host resolves to a private or reserved address' })
  })

  t.test('testing a disabled destination is 409 CONFLICT', async (t) => {
    const created = await create()
    await call(business.api_key, 'DELETE', `/${created.storage_destination_id}`)
    const res = await call(business.api_key, 'POST', `/${created.storage_destination_id}/test`)
    t.equal(res.statusCode, 409)
    t.equal(res.json().error, 'CONFLICT')
  })

  t.test('requireUsable checks id format, plan, ownership and state in the spec’s order', async (t) => {
    const usable = await create()
    const disabled = await create()
    await call(business.api_key, 'DELETE', `/${disabled.storage_destination_id}`)
    const me = await api.app.accounts.authenticate(business.api_key)
    const them = await api.app.accounts.authenticate(other.api_key)
    const notBusiness = await api.app.accounts.authenticate(growth.api_key)
    const sd = api.app.storageDestinations
    const got = await sd.requireUsable(me!, usable.storage_destination_id)
    t.equal(got._id, usable.storage_destination_id)
    t.same(sd.openCredentials(got), { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey })
    await t.rejects(sd.requireUsable(me!, 'sd_123'), { statusCode: 422, code: 'VALIDATION_ERROR' })
    await t.rejects(sd.requireUsable(notBusiness!, usable.storage_destination_id), { statusCode: 403, code: 'FORBIDDEN' })
    await t.rejects(sd.requireUsable(them!, usable.storage_destination_id), { statusCode: 404, code: 'NOT_FOUND' })
    await t.rejects(sd.requireUsable(me!, `sd_${'f'.repeat(32)}`), { statusCode: 404, code: 'NOT_FOUND' })
    await t.rejects(sd.requireUsable(me!, disabled.storage_destination_id), { statusCode: 409, code: 'CONFLICT' })
  })

  t.test('no response ever carried a secret', async (t) => {
    t.ok(allBodies.length > 10)
    for (const body of allBodies) {
      t.notOk(body.includes(SECRET), 'no secret access key')
      t.notOk(body.includes(SESSION), 'no session token')
      t.notOk(body.includes(s3.secretAccessKey), 'no S3 secret')
    }
  })
})
