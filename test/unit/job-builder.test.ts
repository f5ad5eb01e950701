import t from 'tap'
import type { V1Container } from '@kubernetes/client-node'
import { buildJob, deadlineSecondsFor, jobNameFor } from '../../operator/job-builder.js'
import { commandSpec, jobConfig, storedMediaCommand } from '../operator/fixtures.js'

const lockedDown = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  privileged: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
}

function containers(job: ReturnType<typeof buildJob>): V1Container[] {
  const pod = job.spec!.template.spec!
  return [...(pod.initContainers ?? []), ...pod.containers]
}

t.test('names the Job ffkube-<command_id>, at most 63 characters', async (t) => {
  t.equal(jobNameFor('0b6f3a52-57a4-4ef4-a8d1-1b2f1f0e9c11'), 'ffkube-0b6f3a52-57a4-4ef4-a8d1-1b2f1f0e9c11')
  const long = jobNameFor('a'.repeat(80))
  t.equal(long.length, 63)
  t.notMatch(jobNameFor(`${'a'.repeat(55)}-bcd`), /-$/, 'never ends on a hyphen after the cut')
})

t.test('a Job that runs once, within the deadline, owned by its MediaCommand', async (t) => {
  const mc = storedMediaCommand()
  const job = buildJob(mc, jobConfig)
  t.equal(job.metadata!.name, `ffkube-${mc.metadata.name}`)
  t.equal(job.metadata!.namespace, 'ffkube')
  t.equal(job.spec!.backoffLimit, 0)
  t.equal(job.spec!.activeDeadlineSeconds, 1800)
  t.equal(job.spec!.ttlSecondsAfterFinished, 600)
  t.same(job.metadata!.ownerReferences, [{
    apiVersion: 'ffkube.io/v1alpha1', kind: 'MediaCommand', name: mc.metadata.name, uid: mc.metadata.uid, controller: true, blockOwnerDeletion: true,
  }])
  t.equal(job.metadata!.labels!['ffkube.io/command-id'], mc.metadata.name)
  t.equal(job.metadata!.labels!['ffkube.io/account-id'], 'acc_0123456789abcdef')
  t.equal(job.metadata!.labels!['ffkube.io/command-type'], 'FFMPEG_COMMAND')
  t.equal(job.metadata!.labels!['app.kubernetes.io/managed-by'], 'ffkube-operator')
  t.same(job.spec!.template.metadata!.labels, job.metadata!.labels, 'pods carry the same labels, so the pod watch finds them')
})

t.test("the command's own time limit overrides the default deadline", async (t) => {
  const mc = storedMediaCommand()
  mc.spec.timeLimitSeconds = 90
  t.equal(deadlineSecondsFor(mc, jobConfig), 90)
  t.equal(buildJob(mc, jobConfig).spec!.activeDeadlineSeconds, 90)
})

t.test("a command's limits become the Job's deadline, its run container's CPU limit and memory limit, and lower requests above them", async (t) => {
  const mc = storedMediaCommand(commandSpec({ limits: { maxRunSeconds: 120, vcpuMillis: 1500, memoryMib: 4096 } }))
  t.match(mc.spec, { timeLimitSeconds: 120, vcpuMillis: 1500, memoryMib: 4096 }, 'the MediaCommand records them')
  const job = buildJob(mc, jobConfig)
  t.equal(job.spec!.activeDeadlineSeconds, 120)
  const byName = Object.fromEntries(containers(job).map((c) => [c.name, c]))
  t.same(byName.ffmpeg!.resources, {
    requests: { cpu: '250m', memory: '256Mi', 'ephemeral-storage': '1Gi' },
    limits: { cpu: '1500m', memory: '4096Mi', 'ephemeral-storage': '5Gi' },
  }, 'the CPU request stays the operator\'s, so a 1.5-core command still fits a node with less free')
  t.same(byName.upload!.resources!.limits!.cpu, '2', 'upload keeps the operator\'s limits')
  const small = buildJob(storedMediaCommand(commandSpec({ limits: { maxRunSeconds: 5, vcpuMillis: 100, memoryMib: 128 } })), jobConfig)
  const run = containers(small).find((c) => c.name === 'ffmpeg')!
  t.same([run.resources!.requests!.memory, run.resources!.limits!.memory], ['128Mi', '128Mi'], 'a memory request above the limit is lowered to it')
  t.same([run.resources!.requests!.cpu, run.resources!.limits!.cpu], ['100m', '100m'], 'a CPU request above the limit is lowered to it')
})

t.test('the pod is locked down: no token, no service links, non-root, seccomp, never restarted', async (t) => {
  const pod = buildJob(storedMediaCommand(), jobConfig).spec!.template.spec!
  t.equal(pod.restartPolicy, 'Never')
  t.equal(pod.automountServiceAccountToken, false)
  t.equal(pod.enableServiceLinks, false)
  t.same(pod.securityContext, { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } })
  t.same(pod.volumes, [
    { name: 'work', emptyDir: { sizeLimit: '4Gi' } },
    { name: 'upload-scratch', emptyDir: { sizeLimit: '256Mi' } },
    { name: 'storage-credentials', secret: { secretName: 'ffkube-storage', items: [{ key: 'credentials.json', path: 'credentials.json' }], defaultMode: 0o440 } },
  ], 'the size-limited work directory, the upload container\'s own scratch directory, and the storage Secret')
  t.equal(pod.runtimeClassName, undefined)
  t.equal(pod.nodeSelector, undefined)
  t.equal(pod.tolerations, undefined)
  t.equal(pod.serviceAccountName, undefined)
  t.equal(pod.hostNetwork, undefined)
  t.equal(pod.hostPID, undefined)
})

t.test('runs ffmpeg (fetch and run) and upload as two containers started together, both locked down', async (t) => {
  const mc = storedMediaCommand()
  const job = buildJob(mc, jobConfig)
  const pod = job.spec!.template.spec!
  t.equal(pod.initContainers, undefined, 'no init container: the kubelet would start the next one only after its next relist')
  t.same(pod.containers.map((c) => c.name), ['ffmpeg', 'upload'], 'ffmpeg first: the kubelet starts them in order in one sync')
  t.equal(pod.shareProcessNamespace, undefined, 'ffmpeg cannot see the upload process')
  t.notOk(pod.containers.some((c) => c.restartPolicy), 'neither is a sidecar')
  const phases = containers(job).map((c) => c.command)
  t.same(phases, ['fetch-run', 'upload'].map((phase) => ['node', '/app/runner.js', '--phase', phase, '--work-dir', '/work']))
  for (const c of containers(job)) {
    t.equal(c.image, 'registry.example.com/ffkube/runner:1.2.3', `${c.name}: runner image`)
    t.equal(c.imagePullPolicy, 'IfNotPresent')
    t.same(c.securityContext, lockedDown, `${c.name}: security context`)
    t.same(c.resources, {
      requests: c.name === 'upload' ? { cpu: '10m', memory: '128Mi', 'ephemeral-storage': '64Mi' } : { cpu: '250m', memory: '256Mi', 'ephemeral-storage': '1Gi' },
      limits: { cpu: '2', memory: '1Gi', 'ephemeral-storage': '5Gi' },
    }, `${c.name}: resources (the upload container requests little: it mostly waits beside ffmpeg)`)
    t.same(c.volumeMounts![0], { name: 'work', mountPath: '/work' }, `${c.name}: the work directory`)
    t.equal(c.workingDir, '/work')
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]))
    t.equal(env.FFKUBE_COMMAND_ID, mc.metadata.name)
    t.equal(env.TMPDIR, c.name === 'upload' ? '/var/run/ffkube/upload/tmp' : '/work/.tmp', `${c.name}: temporary files in a writable volume`)
    t.equal(env.HOME, c.name === 'upload' ? '/var/run/ffkube/upload/home' : '/work/.home', `${c.name}: HOME (the upload's never where ffmpeg writes)`)
    t.equal(env.NATS_URL, 'nats://nats.ffkube:4222')
    t.equal(env.FFKUBE_STATUS_REPORTER, 'nats')
    t.equal(env.FFKUBE_WORK_DIR, '/work')
    t.equal(env.S3_BUCKET, 'media', `${c.name}: non-secret runner settings`)
    t.equal(env.S3_ENDPOINT, 'https://s3.example.com')
    const spec = JSON.parse(env.FFKUBE_COMMAND_SPEC!)
    t.equal(spec.commandId, mc.metadata.name)
    t.same(spec.ffmpegCommands, mc.spec.ffmpegCommands)
  }
})

t.test('only the upload container mounts the storage Secret; the ffmpeg container has no secret and no token', async (t) => {
  const job = buildJob(storedMediaCommand(), jobConfig)
  const byName = Object.fromEntries(containers(job).map((c) => [c.name, c]))
  t.same(byName.upload!.volumeMounts, [
    { name: 'work', mountPath: '/work' },
    { name: 'upload-scratch', mountPath: '/var/run/ffkube/upload' },
    { name: 'storage-credentials', mountPath: '/var/run/secrets/ffkube/storage', readOnly: true },
  ])
  t.ok(byName.upload!.env!.some((e) => e.name === 'S3_CREDENTIALS_FILE' && e.value === '/var/run/secrets/ffkube/storage/credentials.json'))
  for (const name of ['ffmpeg']) {
    const c = byName[name]!
    t.same(c.volumeMounts, [{ name: 'work', mountPath: '/work' }], `${name}: the work directory only`)
    t.equal(c.envFrom, undefined, `${name}: no envFrom`)
    t.notOk(c.env!.some((e) => e.valueFrom), `${name}: no env from a Secret or elsewhere`)
    t.notOk(c.env!.some((e) => /SECRET|CREDENTIAL|TOKEN|PASSWORD|ACCESS_KEY/.test(e.name)), `${name}: no credential variable`)
  }
  const json = JSON.stringify(job)
  t.notMatch(json, /secretKeyRef|envFrom/, 'no Secret reaches any environment')
  t.equal(json.split('"secretName"').length - 1, 1, 'one Secret volume')
})

t.test('a command with a storage destination mounts its per-command Secret in the upload container only', async (t) => {
  const destination = {
    id: `sd_${'cd'.repeat(16)}`, endpointUrl: 'https://s3.example.com', region: 'auto', bucket: 'media-out', prefix: 'exports', pathStyle: false, publicBaseUrl: null,
  }
  const mc = storedMediaCommand(commandSpec({ storageDestinationId: destination.id, storageDestination: destination }))
  const job = buildJob(mc, jobConfig)
  const pod = job.spec!.template.spec!
  t.same(pod.volumes!.find((v) => v.name === 'destination-credentials'), {
    name: 'destination-credentials',
    secret: { secretName: `ffkube-${mc.metadata.name}-destination`, items: [{ key: 'credentials.json', path: 'credentials.json' }], defaultMode: 0o440 },
  })
  const byName = Object.fromEntries(containers(job).map((c) => [c.name, c]))
  t.same(byName.upload!.volumeMounts, [
    { name: 'work', mountPath: '/work' },
    { name: 'upload-scratch', mountPath: '/var/run/ffkube/upload' },
    { name: 'storage-credentials', mountPath: '/var/run/secrets/ffkube/storage', readOnly: true },
    { name: 'destination-credentials', mountPath: '/var/run/secrets/ffkube/destination', readOnly: true },
  ])
  t.ok(byName.upload!.env!.some((e) => e.name === 'FFKUBE_DESTINATION_CREDENTIALS_FILE' && e.value === '/var/run/secrets/ffkube/destination/credentials.json'))
  for (const name of ['ffmpeg']) {
    const c = byName[name]!
    t.same(c.volumeMounts, [{ name: 'work', mountPath: '/work' }], `${name}: no destination volume`)
    t.notOk(c.env!.some((e) => e.name === 'FFKUBE_DESTINATION_CREDENTIALS_FILE'), `${name}: no destination credentials variable`)
  }
  const spec = JSON.parse(byName.upload!.env!.find((e) => e.name === 'FFKUBE_COMMAND_SPEC')!.value!)
  t.same(spec.storageDestination, destination, 'the runner gets the non-secret description in its spec')
})

t.test("a yt-dlp command mounts the optional cookies Secret in the upload container only, and a memory directory in the ffmpeg container only", async (t) => {
  const mc = storedMediaCommand(commandSpec({ commandType: 'YTDLP_COMMAND', ffmpegCommands: [], inputFiles: {}, outputFiles: {}, ytdlp: { inputUrls: { in_v: 'https://video.example.com/v' }, formatSelector: 'best' } }))
  const job = buildJob(mc, jobConfig)
  const pod = job.spec!.template.spec!
  t.same(pod.volumes!.find((v) => v.name === 'ytdlp-cookies-secret'), {
    name: 'ytdlp-cookies-secret',
    // Optional: an account without cookies has no Secret, and its pod must start all the same.
    secret: { secretName: `ffkube-${mc.metadata.name}-ytdlp-cookies`, items: [{ key: 'cookies.txt', path: 'cookies.txt' }], defaultMode: 0o440, optional: true },
  })
  t.same(pod.volumes!.find((v) => v.name === 'ytdlp-cookies'), { name: 'ytdlp-cookies', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }, 'in memory: never on the node\'s disk')
  const byName = Object.fromEntries(containers(job).map((c) => [c.name, c]))
  t.same(byName.upload!.volumeMounts!.filter((m) => m.name.startsWith('ytdlp')), [{ name: 'ytdlp-cookies-secret', mountPath: '/var/run/secrets/ffkube/ytdlp-cookies', readOnly: true }])
  t.ok(byName.upload!.env!.some((e) => e.name === 'FFKUBE_YTDLP_COOKIES_SOURCE' && e.value === '/var/run/secrets/ffkube/ytdlp-cookies/cookies.txt'))
  t.same(byName.ffmpeg!.volumeMounts, [{ name: 'work', mountPath: '/work' }, { name: 'ytdlp-cookies', mountPath: '/var/run/ffkube/ytdlp-cookies' }], 'the ffmpeg container never mounts the Secret')
  t.ok(byName.ffmpeg!.env!.some((e) => e.name === 'FFKUBE_YTDLP_COOKIES_DIR' && e.value === '/var/run/ffkube/ytdlp-cookies'))
  t.notOk(byName.ffmpeg!.env!.some((e) => e.name === 'FFKUBE_YTDLP_COOKIES_SOURCE'))
})

t.test('an FFmpeg command has no cookie volume at all', async (t) => {
  const job = buildJob(storedMediaCommand(), jobConfig)
  t.notOk(job.spec!.template.spec!.volumes!.some((v) => v.name.startsWith('ytdlp')))
  for (const c of containers(job)) t.notOk(c.env!.some((e) => e.name.startsWith('FFKUBE_YTDLP_COOKIES')), c.name)
})

t.test('a command without a storage destination has no destination volume', async (t) => {
  const job = buildJob(storedMediaCommand(), jobConfig)
  t.notOk(job.spec!.template.spec!.volumes!.some((v) => v.name === 'destination-credentials'))
  t.notOk(JSON.stringify(job).includes('FFKUBE_DESTINATION_CREDENTIALS_FILE'))
})

t.test('copies optional scheduling settings: runtimeClassName, nodeSelector, tolerations, service account', async (t) => {
  const tolerations = [{ key: 'media', operator: 'Exists', effect: 'NoSchedule' }]
  const pod = buildJob(storedMediaCommand(), {
    ...jobConfig, runtimeClassName: 'gvisor', nodeSelector: { pool: 'media' }, tolerations, serviceAccountName: 'ffkube-runner',
  }).spec!.template.spec!
  t.equal(pod.runtimeClassName, 'gvisor')
  t.same(pod.nodeSelector, { pool: 'media' })
  t.same(pod.tolerations, tolerations)
  t.equal(pod.serviceAccountName, 'ffkube-runner')
  t.equal(pod.automountServiceAccountToken, false, 'a named service account still mounts no token')
})

t.test('is pure: the same MediaCommand builds the same Job', async (t) => {
  const mc = storedMediaCommand(commandSpec({ commandType: 'CHAINED_COMMAND', ffmpegCommands: ['ffmpeg -i a b', 'ffmpeg -i b c'] }))
  t.same(buildJob(mc, jobConfig), buildJob(structuredClone(mc), jobConfig))
})

t.test('operator config refuses, naming it, a RUNNER_ENV name the operator sets itself', async (t) => {
  const { loadOperatorConfig, OperatorConfigError } = await import('../../operator/config.js')
  const { RESERVED_RUNNER_ENV } = await import('../../operator/reserved-runner-env.js')
  t.ok(Object.keys(RESERVED_RUNNER_ENV).length >= 15, 'the list holds the pod\'s own names and the shared settings')
  for (const name of ['S3_BUCKET', 'S3_ENDPOINT', 'S3_REGION', 'S3_FORCE_PATH_STYLE', 'NATS_URL', 'FFKUBE_STATUS_REPORTER', 'TMPDIR', 'FFKUBE_SANDBOX']) {
    t.throws(() => loadOperatorConfig({ RUNNER_ENV: JSON.stringify({ FFKUBE_INPUT_TIMEOUT_SECONDS: '300', [name]: 'elsewhere' }) }),
      new OperatorConfigError(`RUNNER_ENV must not set ${name}: ${RESERVED_RUNNER_ENV[name]}`), name)
  }
})

t.test('operator config hands runners its own storage and URL-guard settings, the ones the API has', async (t) => {
  const { loadOperatorConfig } = await import('../../operator/config.js')
  const config = loadOperatorConfig({
    RUNNER_ENV: '{"LOG_LEVEL":"debug"}', S3_BUCKET: 'media', S3_ENDPOINT: 'https://s3.example.com', S3_REGION: 'eu-west-1',
    S3_FORCE_PATH_STYLE: 'false', ALLOW_PRIVATE_NETWORKS: 'true',
  })
  t.same(config.job.runnerEnv, {
    LOG_LEVEL: 'debug', S3_BUCKET: 'media', S3_ENDPOINT: 'https://s3.example.com', S3_REGION: 'eu-west-1', S3_FORCE_PATH_STYLE: 'false', ALLOW_PRIVATE_NETWORKS: 'true',
  })
  t.same(loadOperatorConfig({ S3_ENDPOINT: '' }).job.runnerEnv, {}, 'unset or empty: the runner keeps its defaults')
})

t.test('refuses a MediaCommand without a uid (the owner reference would dangle)', async (t) => {
  const mc = storedMediaCommand()
  delete mc.metadata.uid
  t.throws(() => buildJob(mc, jobConfig), /no uid/)
})

t.test('operator config refuses credentials in RUNNER_ENV, which every container sees', async (t) => {
  const { loadOperatorConfig } = await import('../../operator/config.js')
  t.throws(() => loadOperatorConfig({ RUNNER_ENV: '{"S3_SECRET_ACCESS_KEY":"x"}' }), /RUNNER_ENV must not carry credentials/)
  t.throws(() => loadOperatorConfig({ RUNNER_ENV: '{"S3_ACCESS_KEY_ID":"x"}' }), /RUNNER_ENV/)
  t.same(loadOperatorConfig({ RUNNER_ENV: '{"FFKUBE_INPUT_TIMEOUT_SECONDS":"300"}' }).job.runnerEnv, { FFKUBE_INPUT_TIMEOUT_SECONDS: '300' })
  t.throws(() => loadOperatorConfig({ RUNNER_ENV: '{"SSH_PRIVATE_KEY":"x"}' }), /RUNNER_ENV/)
  t.throws(() => loadOperatorConfig({ JOB_DEADLINE_SECONDS: 'soon' }), /JOB_DEADLINE_SECONDS must be an integer/)
  t.throws(() => loadOperatorConfig({ LEASE_DURATION_SECONDS: '10', LEASE_RENEW_DEADLINE_SECONDS: '10' }), /less than/)
  const defaults = loadOperatorConfig({})
  t.equal(defaults.job.deadlineSeconds, 3600)
  t.equal(defaults.retentionSeconds, 86400)
  t.equal(defaults.job.uploadSecretName, 'ffkube-storage')
})

t.test("the upload container's requests never exceed the operator's own", async (t) => {
  const small = { ...jobConfig, resources: { ...jobConfig.resources, cpuRequest: '5m', memoryRequest: '64Mi', ephemeralStorageRequest: '32Mi' } }
  const upload = buildJob(storedMediaCommand(), small).spec!.template.spec!.containers.find((c) => c.name === 'upload')!
  t.same(upload.resources!.requests, { cpu: '5m', memory: '64Mi', 'ephemeral-storage': '32Mi' }, 'lowered to the operator\'s request')
})

t.test("the operator's NATS credentials are its own: no runner container is given them", async (t) => {
  const { loadOperatorConfig, OperatorConfigError } = await import('../../operator/config.js')
  const password = 'the-service-password-1234'
  const config = loadOperatorConfig({ NATS_URL: 'nats://nats.ffkube:4222', NATS_USER: 'ffkube', NATS_PASSWORD: password })
  t.same(config.natsCredentials, { user: 'ffkube', pass: password })
  const job = buildJob(storedMediaCommand(), config.job)
  t.notOk(JSON.stringify(job).includes(password), 'the password appears nowhere in the Job')
  for (const c of containers(job)) t.notOk((c.env ?? []).some((e) => e.name.startsWith('NATS_') && e.name !== 'NATS_URL'), `${c.name}: NATS_URL only`)
  t.throws(() => loadOperatorConfig({ NATS_PASSWORD: password }), OperatorConfigError)
})
