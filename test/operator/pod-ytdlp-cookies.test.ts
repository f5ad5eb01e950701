/**
 * Per-account yt-dlp cookies with EXECUTOR=kubernetes, through HTTP, the
 * KubernetesExecutor, a real kube-apiserver, the operator and the test node
 * running the pod's two containers: the Secret reaches the upload container
 * only, the ffmpeg container's fetch gets the text over the hand-over socket,
 * and another account's command never gets it.
 */
import { randomBytes } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { CoreV1Api } from '@kubernetes/client-node'
import t from 'tap'
import { ytdlpCookiesSecretName } from '../../contracts/ytdlp-cookies.js'
import { YTDLP_COOKIES_SECRET_VOLUME, YTDLP_COOKIES_VOLUME } from '../../operator/job-builder.js'
import { Client } from '../e2e/service.js'
import { eventually } from '../harness/eventually.js'
import { startKube } from '../harness/kube.js'
import { makeClip } from '../harness/media.js'
import { scratchDir } from '../harness/scratch.js'
import { installCrd } from './kube-setup.js'
import { startKubernetesService } from './kubernetes-service.js'

const TIMEOUT = 120_000

t.test("a pod's yt-dlp gets its own account's cookies, from the upload container, and no other account's", async (t) => {
  const kube = await startKube(t)
  const kc = kube.kubeConfig()
  await installCrd(kc)
  const dir = await scratchDir(t, 'ffkube-pod-cookies-')
  const clipBytes = await readFile(await makeClip(join(dir, 'clip.mp4'), { seconds: 1, width: 160, height: 90 }))
  const service = await startKubernetesService(t, kc)
  const core = kc.makeApiClient(CoreV1Api)

  const secret = randomBytes(24).toString('hex')
  const cookieHeaders: string[] = []
  const site = createServer((req, res) => {
    cookieHeaders.push(req.headers.cookie ?? '')
    if (!(req.headers.cookie ?? '').split(/;\s*/).includes(`session=${secret}`)) return res.writeHead(401).end()
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': clipBytes.length }).end(clipBytes)
  })
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())))
  const videoUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/members/clip.mp4`

  const [a, b] = await Promise.all([service.api.createAccount('growth'), service.api.createAccount('growth')])
  const alice = new Client({ baseUrl: service.baseUrl, apiKey: a.api_key })
  const bob = new Client({ baseUrl: service.baseUrl, apiKey: b.api_key })
  const stored = await alice.request('PUT', '/ytdlp-cookies', { cookies: `127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\t${secret}\n` })
  t.equal(stored.status, 200, JSON.stringify(stored.body))

  const runsOf = (commandId: string) =>
    eventually(`both containers of ${commandId} to end`, () => {
      const runs = service.pods.runs.filter((r) => r.podEnv.FFKUBE_COMMAND_ID === commandId)
      return runs.length === 2 ? runs : undefined
    })

  t.test("the account's command: SUCCESS with its cookie; the Secret in the upload container only; nothing left in the ffmpeg container's cookie directory", async (t) => {
    const { command_id } = await alice.post('/ytdlp-download', { input_urls: { in_v: videoUrl } })
    const done = await alice.waitForCommand(command_id, TIMEOUT)
    t.match(done, { status: 'SUCCESS', output_files: { out_v: { file_type: 'video' } } }, JSON.stringify(done))
    t.ok(cookieHeaders.some((header) => header.includes(`session=${secret}`)), 'the site saw the cookie')

    const runs = await runsOf(command_id)
    const ffmpeg = runs.find((r) => r.name === 'ffmpeg')!
    const upload = runs.find((r) => r.name === 'upload')!
    t.ok(upload.mounts.includes(YTDLP_COOKIES_SECRET_VOLUME), 'the upload container mounts the Secret')
    t.notOk(ffmpeg.mounts.includes(YTDLP_COOKIES_SECRET_VOLUME), 'the ffmpeg container does not')
    t.ok(ffmpeg.mounts.includes(YTDLP_COOKIES_VOLUME), 'it has its own cookie directory instead')
    t.notOk(JSON.stringify(ffmpeg.podEnv).includes(secret) || JSON.stringify(upload.podEnv).includes(secret), 'no environment holds the cookie')
    t.same(await readdir(service.pods.volumeDir(ffmpeg.pod, YTDLP_COOKIES_VOLUME)), [], 'the fetch emptied its cookie directory')
    const work = await readdir(service.pods.volumeDir(ffmpeg.pod, 'work'), { recursive: true, withFileTypes: true })
    for (const entry of work.filter((e) => e.isFile())) {
      t.notOk((await readFile(join(entry.parentPath, entry.name))).includes(secret), `${entry.name} in the work volume holds no cookie`)
    }
    const secretObject = await core.readNamespacedSecret({ name: ytdlpCookiesSecretName(command_id), namespace: service.namespace })
    t.match(secretObject.metadata?.ownerReferences, [{ kind: 'MediaCommand', name: command_id }], 'owned by its MediaCommand, so deleted with it')
    const logs = await alice.request('GET', `/commands/${command_id}/logs`)
    t.notOk(JSON.stringify(logs.body).includes(secret), 'the command log holds no cookie')
  })

  t.test("another account's command: no Secret, no cookie, SOURCE_LOGIN_REQUIRED", async (t) => {
    const seenBefore = cookieHeaders.length
    const { command_id } = await bob.post('/ytdlp-download', { input_urls: { in_v: videoUrl } })
    const done = await bob.waitForCommand(command_id, TIMEOUT)
    t.match(done, { status: 'FAILED', error_status: 'SOURCE_LOGIN_REQUIRED' })
    t.ok(cookieHeaders.length > seenBefore, 'the site was asked')
    t.notOk(cookieHeaders.slice(seenBefore).some((header) => header.includes(secret)), "never with the other account's cookie")
    const missing = await core.readNamespacedSecret({ name: ytdlpCookiesSecretName(command_id), namespace: service.namespace }).catch((err: { code?: number }) => err.code)
    t.equal(missing, 404, 'no cookies Secret for an account without cookies')
    await runsOf(command_id)
  })
})
