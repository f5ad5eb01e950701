import t from 'tap'
import { resolve } from 'node:path'
import { ConfigError, loadConfig, requireExternalServices } from '../../api/config.js'

t.test('defaults to local mode on port 8080 with its own services', async (t) => {
  const config = loadConfig({})
  t.equal(config.port, 8080)
  t.equal(config.host, '127.0.0.1')
  t.equal(config.executor, 'local')
  t.equal(config.mongodbUrl, undefined)
  t.equal(config.natsUrl, undefined)
  t.equal(config.s3.endpoint, undefined)
  t.equal(config.allowPrivateNetworks, false)
  t.equal(config.dataDir, resolve('.ffkube'))
  t.same(config.roles, ['api', 'worker', 'webhooks'], 'one process runs every role')
})

t.test('local mode bounds a command far below an hour and caps its work directory by default', async (t) => {
  const config = loadConfig({})
  t.ok(config.commandDeadlineSeconds > 0 && config.commandDeadlineSeconds <= 1800, `COMMAND_DEADLINE_SECONDS defaults to ${config.commandDeadlineSeconds} s`)
  t.ok(Number.isSafeInteger(config.commandWorkDirMaxBytes) && config.commandWorkDirMaxBytes > 0, `COMMAND_WORK_DIR_MAX_BYTES defaults to ${config.commandWorkDirMaxBytes}`)
  t.equal(loadConfig({ COMMAND_WORK_DIR_MAX_BYTES: '1048576' }).commandWorkDirMaxBytes, 1048576)
})

t.test('each plan caps the commands of one account in flight, 0 meaning no cap', async (t) => {
  t.same(loadConfig({}).concurrencyLimits, { free: 1, trial: 2, growth: 4, business: 8 })
  t.same(loadConfig({ CONCURRENT_COMMANDS_FREE: '3', CONCURRENT_COMMANDS_BUSINESS: '0' }).concurrencyLimits, { free: 3, trial: 2, growth: 4, business: 0 })
})

t.test('each plan caps the bytes an account keeps in managed storage, 0 meaning no cap', async (t) => {
  t.same(loadConfig({}).storageQuotas, { free: 1024 ** 3, trial: 5 * 1024 ** 3, growth: 100 * 1024 ** 3, business: 1024 ** 4 })
  t.same(loadConfig({ STORAGE_QUOTA_FREE_BYTES: '1000', STORAGE_QUOTA_BUSINESS_BYTES: '0' }).storageQuotas, { free: 1000, trial: 5 * 1024 ** 3, growth: 100 * 1024 ** 3, business: 0 })
})

t.test('each plan keeps managed files a number of days, 0 meaning until deleted', async (t) => {
  t.same(loadConfig({}).retentionDays, { free: 1, trial: 7, growth: 30, business: 90 })
  t.same(loadConfig({ RETENTION_DAYS_FREE: '3', RETENTION_DAYS_BUSINESS: '0' }).retentionDays, { free: 3, trial: 7, growth: 30, business: 0 })
})

t.test('an account may hold 32 event streams per API process, each living an hour, unless configured', async (t) => {
  t.match(loadConfig({}), { eventStreamsPerAccount: 32, eventStreamMaxSeconds: 3600 })
  t.match(loadConfig({ EVENT_STREAMS_PER_ACCOUNT: '4', EVENT_STREAM_MAX_SECONDS: '600' }), { eventStreamsPerAccount: 4, eventStreamMaxSeconds: 600 })
})

t.test('FFKUBE_ROLES picks the roles one process runs', async (t) => {
  t.same(loadConfig({ FFKUBE_ROLES: 'worker' }).roles, ['worker'])
  t.same(loadConfig({ FFKUBE_ROLES: ' api , webhooks,api' }).roles, ['api', 'webhooks'], 'trimmed, each once')
})

t.test('outside local mode the servers and keys must be configured, and each missing one is named', async (t) => {
  t.throws(() => requireExternalServices(loadConfig({ EXECUTOR: 'kubernetes', NATS_URL: 'nats://n:4222' })), {
    name: 'ConfigError',
    message: 'MONGODB_URL, ENCRYPTION_KEYS must be set for ffkube outside local mode',
  })
  const full = loadConfig({ MONGODB_URL: 'mongodb://db', NATS_URL: 'nats://n:4222', ENCRYPTION_KEYS: 'k:AAAA' })
  t.equal(requireExternalServices(full), full)
})

t.test('reads every documented variable', async (t) => {
  const config = loadConfig({
    PORT: '9000',
    HOST: '0.0.0.0',
    MONGODB_URL: 'mongodb://db:27017',
    NATS_URL: 'nats://nats:4222',
    EXECUTOR: 'kubernetes',
    S3_ENDPOINT: 'https://s3.example.com',
    S3_BUCKET: 'media',
    S3_REGION: 'eu-west-1',
    S3_ACCESS_KEY_ID: 'AKIA',
    S3_SECRET_ACCESS_KEY: 'secret',
    S3_FORCE_PATH_STYLE: 'false',
    ALLOW_PRIVATE_NETWORKS: '1',
  })
  t.match(config, {
    port: 9000,
    host: '0.0.0.0',
    mongodbUrl: 'mongodb://db:27017',
    natsUrl: 'nats://nats:4222',
    executor: 'kubernetes',
    s3: { endpoint: 'https://s3.example.com', bucket: 'media', region: 'eu-west-1', accessKeyId: 'AKIA', secretAccessKey: 'secret', forcePathStyle: false },
    allowPrivateNetworks: true,
  })
})

t.test('console sign-ins are limited to 10 failures a minute per address by default, 0 meaning no limit', async (t) => {
  t.equal(loadConfig({}).consoleSignInFailuresPerMinute, 10)
  t.equal(loadConfig({ CONSOLE_SIGN_IN_FAILURES_PER_MINUTE: '0' }).consoleSignInFailuresPerMinute, 0)
  t.equal(loadConfig({ CONSOLE_SIGN_IN_FAILURES_PER_MINUTE: '25' }).consoleSignInFailuresPerMinute, 25)
})

t.test('TRUST_PROXY trusts no proxy by default, and takes true, false or a list of proxy addresses and CIDRs', async (t) => {
  const cases: Array<[string | undefined, boolean | string[]]> = [
    [undefined, false],
    ['', false],
    ['false', false],
    ['no', false],
    ['true', true],
    ['TRUE', true],
    ['yes', true],
    ['10.244.0.0/16', ['10.244.0.0/16']],
    [' 10.0.0.1 , 192.168.0.0/24,fd00::/8, loopback ', ['10.0.0.1', '192.168.0.0/24', 'fd00::/8', 'loopback']],
    ['::1', ['::1']],
  ]
  for (const [raw, expected] of cases) t.same(loadConfig(raw === undefined ? {} : { TRUST_PROXY: raw }).trustProxy, expected, `TRUST_PROXY=${String(raw)}`)
})

const rejected: Array<[string, Record<string, string>, RegExp]> = [
  ['a port that is not a number', { PORT: 'http' }, /^PORT must be a port number/],
  ['a port out of range', { PORT: '70000' }, /^PORT must be/],
  ['an unknown executor', { EXECUTOR: 'docker' }, /^EXECUTOR must be one of local, kubernetes, got "docker"/],
  ['a boolean that is not one', { ALLOW_PRIVATE_NETWORKS: 'maybe' }, /^ALLOW_PRIVATE_NETWORKS must be/],
  ['an S3 endpoint without a scheme', { S3_ENDPOINT: 's3.example.com' }, /^S3_ENDPOINT must be an http/],
  ['an unknown log level', { LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
  ['an unknown role', { FFKUBE_ROLES: 'api,dispatcher' }, /^FFKUBE_ROLES must list roles from api, worker, webhooks, got "dispatcher"/],
  ['a work-dir cap that is no number', { COMMAND_WORK_DIR_MAX_BYTES: '8GiB' }, /^COMMAND_WORK_DIR_MAX_BYTES must be a whole number of at least 1/],
  ['a work-dir cap of 0', { COMMAND_WORK_DIR_MAX_BYTES: '0' }, /^COMMAND_WORK_DIR_MAX_BYTES must be/],
  ['an event stream cap of 0', { EVENT_STREAMS_PER_ACCOUNT: '0' }, /^EVENT_STREAMS_PER_ACCOUNT must be a whole number of at least 1, got "0"/],
  ['an event stream lifetime that is no number', { EVENT_STREAM_MAX_SECONDS: '1h' }, /^EVENT_STREAM_MAX_SECONDS must be a whole number of at least 1/],
  ['an event stream lifetime over a day', { EVENT_STREAM_MAX_SECONDS: '2592000' }, /^EVENT_STREAM_MAX_SECONDS must be at most 86400 \(a day\), got 2592000/],
  ['a sign-in failure limit that is no whole number', { CONSOLE_SIGN_IN_FAILURES_PER_MINUTE: 'ten' }, /^CONSOLE_SIGN_IN_FAILURES_PER_MINUTE must be a whole number/],
  ['a TRUST_PROXY hop count, which cannot tell a proxy from a client', { TRUST_PROXY: '1' }, /^TRUST_PROXY takes no hop count \("1"\)/],
  ['a TRUST_PROXY entry that is no address', { TRUST_PROXY: '10.0.0.1,ingress-nginx' }, /^TRUST_PROXY must be true, false, or a comma list of proxy addresses and CIDRs .*"ingress-nginx" is none of these/],
  ['a TRUST_PROXY CIDR with a prefix too long', { TRUST_PROXY: '10.0.0.0/33' }, /^TRUST_PROXY must be .*"10.0.0.0\/33"/],
  ['a TRUST_PROXY list with an empty entry', { TRUST_PROXY: '10.0.0.1,,10.0.0.2' }, /^TRUST_PROXY must be .*"" is none of these/],
  ['a TRUST_PROXY boolean spelt as a number', { TRUST_PROXY: '0' }, /^TRUST_PROXY takes no hop count/],
  ['a concurrency cap that is no whole number', { CONCURRENT_COMMANDS_GROWTH: '2.5' }, /^CONCURRENT_COMMANDS_GROWTH must be a whole number of commands/],
  ['a storage quota written with a unit', { STORAGE_QUOTA_TRIAL_BYTES: '5GiB' }, /^STORAGE_QUOTA_TRIAL_BYTES must be a whole number of bytes \(0 = unlimited\), got "5GiB"$/],
  ['a retention that is no whole number of days', { RETENTION_DAYS_TRIAL: '1.5' }, /^RETENTION_DAYS_TRIAL must be a whole number of days/],
  ['a retention past ten years', { RETENTION_DAYS_GROWTH: '3651' }, /^RETENTION_DAYS_GROWTH must be at most 3650 days \(0 = kept until deleted\), got 3651/],
]
for (const [what, env, message] of rejected) {
  t.test(`refuses ${what}, naming the variable`, async (t) => {
    t.throws(() => loadConfig(env), { name: 'ConfigError', message })
    t.throws(() => loadConfig(env), ConfigError)
  })
}

t.test('NATS_USER and NATS_PASSWORD come together, or neither for an open server', async (t) => {
  t.same(loadConfig({ NATS_USER: 'ffkube', NATS_PASSWORD: 'p'.repeat(20) }).natsCredentials, { user: 'ffkube', pass: 'p'.repeat(20) })
  t.equal(loadConfig({}).natsCredentials, undefined)
  t.throws(() => loadConfig({ NATS_USER: 'ffkube' }), new ConfigError('NATS_USER and NATS_PASSWORD must be set together: NATS_PASSWORD is unset'))
  t.throws(() => loadConfig({ NATS_PASSWORD: 'secret' }), /NATS_USER is unset/)
})
