/**
 * The cluster lane: ffkube installed with `helm install` on a real single-node
 * Kubernetes (kubelet, containerd, kube-proxy, CoreDNS, a NetworkPolicy
 * enforcer: test/harness/cluster.ts), driven through the API Service. One
 * cluster and one release for every subtest; needs root, cgroup v1 or v2 as the
 * kubelet is configured, and the images from dist/images.json.
 */
import t from 'tap'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { join } from 'node:path'
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
import type { V1Container, V1Job, V1Pod, V1PodList } from '@kubernetes/client-node'
import { LABEL_COMMAND_ID } from '../../contracts/media-command.js'
import { downloadAndProbe } from '../e2e/download.js'
import { run } from '../harness/cluster/run.js'
import { eventually } from '../harness/eventually.js'
import { grayRegion, makeClip } from '../harness/media.js'
import { keysUnder, play } from '../harness/outputs.js'
import { openEventStream } from '../harness/sse.js'
import { startS3 } from '../harness/s3.js'
import { scratchDir } from '../harness/scratch.js'
import { readZip } from '../harness/unzip.js'
import { startInputServer, startWebhookReceiver } from './host-servers.js'
import { DEPLOYMENTS, installRelease, NAMESPACE, PUBLIC_IP, RUNNER_NAMESPACE } from './release.js'
import { watchCommand, type WatchedCommand } from './command-watch.js'
import { FAULTS, recovered } from './faults.js'
import { writeShapeFiles } from './shapes.js'
import { backwardSteps } from './status-order.js'

// Cold start (cluster, images, helm --wait), a few dozen real pods and the fault set: more than the suite's 300 s per file.
t.setTimeout(15 * 60_000)

const TIMEOUT = 180_000
const release = await installRelease(t, (line) => t.comment(line))
const { client, kubectl, kubectlJson, cluster } = release
const dir = await scratchDir(t, 'ffkube-lane-media-')
const clip = await makeClip(join(dir, 'clip.mp4'), { seconds: 2, width: 320, height: 240 })
const shapes = await writeShapeFiles(dir)
const inputs = await startInputServer(t, [clip, ...Object.values(shapes)], [PUBLIC_IP, cluster.nodeIp])
const clipUrl = inputs.url(PUBLIC_IP, clip)

async function runToEnd(path: string, body: unknown) {
  const { command_id } = await client.post(path, body)
  return client.waitForCommand(command_id, TIMEOUT)
}

/**
 * The MediaCommand once the operator has seen its Job end. GET may show the
 * outcome first: the projector takes it from the runner's own event, while the
 * MediaCommand's phase follows the Job, which the kubelet reports a moment later.
 */
async function finishedMediaCommand(commandId: string, phase: 'SUCCESS' | 'FAILED') {
  return eventually(`MediaCommand ${commandId} to be ${phase}`, async () => {
    const mc = await kubectlJson<{ status?: { phase?: string; outputs?: unknown[]; errorStatus?: string } }>(['-n', RUNNER_NAMESPACE, 'get', 'mc', commandId])
    return mc.status?.phase === phase ? mc : undefined
  }, TIMEOUT)
}

async function podsOf(commandId: string): Promise<V1Pod[]> {
  return (await kubectlJson<V1PodList>(['-n', RUNNER_NAMESPACE, 'get', 'pods', '-l', `${LABEL_COMMAND_ID}=${commandId}`])).items
}

t.test('helm install brings up the four Deployments, the restricted runner namespace and the NetworkPolicies', async (t) => {
  for (const name of DEPLOYMENTS) {
    const d = await kubectlJson<{ spec: { replicas: number }; status: { readyReplicas?: number } }>(['-n', NAMESPACE, 'get', 'deploy', name])
    t.equal(d.status.readyReplicas, d.spec.replicas, `${name}: every replica ready`)
  }
  const ns = await kubectlJson<{ metadata: { labels: Record<string, string> } }>(['get', 'namespace', RUNNER_NAMESPACE])
  t.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted')
  const policies = await kubectlJson<{ items: Array<{ metadata: { name: string } }> }>(['-n', RUNNER_NAMESPACE, 'get', 'networkpolicies'])
  t.same(policies.items.map((p) => p.metadata.name), ['ffkube-runner'])
  const crd = await kubectl(['get', 'crd', 'mediacommands.ffkube.io', '-o', 'name'])
  t.match(crd, 'mediacommands.ffkube.io')
})

t.test('the five command types run in real runner pods to SUCCESS, with outputs in managed storage', async (t) => {
  const [single, chained, multiple, download, ytdlp] = await Promise.all([
    client.post('/run-ffmpeg-command', {
      input_files: { in_video: clipUrl },
      output_files: { out_small: 'small.mp4' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -vf scale=160:-2 -c:v libx264 -preset ultrafast -c:a copy {{out_small}}',
    }),
    client.post('/run-chained-ffmpeg-commands', {
      input_files: { in_video: clipUrl },
      output_files: { out_gif: 'preview.gif' },
      ffmpeg_commands: [
        'ffmpeg -t 1 -i {{in_video}} -vf fps=5,scale=160:-1,palettegen palette.png',
        'ffmpeg -t 1 -i <<in_video>> -i palette.png -lavfi fps=5,scale=160:-1[x];[x][1:v]paletteuse <<out_gif>>',
      ],
    }),
    client.post('/run-multiple-ffmpeg-commands', {
      commands: [
        { input_files: { in_a: clipUrl }, output_files: { out_a: 'a.mp3' }, ffmpeg_command: 'ffmpeg -i {{in_a}} -vn -c:a libmp3lame {{out_a}}' },
        { input_files: { in_b: clipUrl }, output_files: { out_b: 'b.jpg' }, ffmpeg_command: 'ffmpeg -i {{in_b}} -frames:v 1 {{out_b}}' },
      ],
    }),
    client.post('/ytdlp-download', { input_urls: { in_talk: clipUrl } }),
    client.post('/run-ytdlp-command', {
      input_urls: { in_talk: clipUrl },
      ffmpeg_command: '-i {{in_talk}} -vn -c:a libmp3lame {{out_audio}}',
      output_files: { out_audio: 'talk.mp3' },
    }),
  ])
  const wait = (id: string) => client.waitForCommand(id, TIMEOUT)
  const [s, c, a, b, d, y] = await Promise.all([single.command_id, chained.command_id, ...multiple.command_ids, download.command_id, ytdlp.command_id].map(wait))
  t.match(s, { status: 'SUCCESS', output_files: { out_small: { filename: 'small.mp4', width: 160, codec: 'h264' } } }, JSON.stringify(s))
  t.match(await downloadAndProbe(s.output_files.out_small.storage_url, dir, 'small.mp4'), { width: 160, codec: 'h264' }, 'the output is in the bucket')
  t.match(c, { status: 'SUCCESS', output_files: { out_gif: { filename: 'preview.gif', width: 160 } } }, JSON.stringify(c))
  t.match(a, { status: 'SUCCESS', output_files: { out_a: { codec: 'mp3' } } }, JSON.stringify(a))
  t.match(b, { status: 'SUCCESS', output_files: { out_b: { file_type: 'image', width: 320 } } }, JSON.stringify(b))
  t.match(d, { status: 'SUCCESS', output_files: { out_talk: { filename: 'talk.mp4', width: 320 } } }, JSON.stringify(d))
  t.match(y, { status: 'SUCCESS', output_files: { out_audio: { filename: 'talk.mp3', codec: 'mp3' } } }, JSON.stringify(y))
  const pods = await podsOf(s.command_id)
  t.equal(pods.length, 1, 'one pod ran the command')
  t.equal(pods[0]!.spec!.initContainers, undefined, 'no init container')
  // SUCCESS can be seen before the kubelet reports the upload container's exit.
  const ended = await eventually('both containers of the pod to end', async () => {
    const statuses = (await podsOf(s.command_id))[0]?.status?.containerStatuses ?? []
    return statuses.length === 2 && statuses.every((c) => c.state?.terminated) ? statuses : undefined
  })
  t.same(ended.map((c) => [c.name, c.state?.terminated?.exitCode]).sort(), [['ffmpeg', 0], ['upload', 0]], 'its two containers, started together, both ended 0')
})

t.test('files of every shape run side by side in real runner pods: burned-in subtitles and a font, an HLS ladder, a zip folder in, a zipped output, and the two refusals', async (t) => {
  const s3 = release.s3.client()
  t.teardown(() => s3.destroy())
  const stored = (commandId: string) => keysUnder(s3, release.s3.bucket, `outputs/${commandId}/`)
  const submitted = await Promise.all([
    client.post('/run-ffmpeg-command', {
      input_files: { in_video: clipUrl, in_srt: inputs.url(PUBLIC_IP, shapes.srt), in_font: inputs.url(PUBLIC_IP, shapes.font) },
      output_files: { out_plain: 'plain.png', out_subs: 'subs.png', out_text: 'text.png' },
      ffmpeg_command: 'ffmpeg -ss 1 -i {{in_video}} -frames:v 1 {{out_plain}} ' +
        "-frames:v 1 -vf \"subtitles={{in_srt}}:force_style='FontSize=28'\" {{out_subs}} " +
        '-frames:v 1 -vf drawtext=fontfile={{in_font}}:text=ffkube:fontsize=40:fontcolor=white:x=10:y=10 {{out_text}}',
    }),
    client.post('/run-ffmpeg-command', {
      input_files: { in_video: clipUrl },
      output_files: { out_hls: 'stream_%v.m3u8' },
      ffmpeg_command: 'ffmpeg -i {{in_video}} -map 0:v -map 0:a -map 0:v -map 0:a -s:v:0 320x180 -s:v:1 160x90 -c:v libx264 -preset ultrafast -g 25 -c:a aac ' +
        '-f hls -hls_time 1 -hls_playlist_type vod -var_stream_map "v:0,a:0 v:1,a:1" -master_pl_name master.m3u8 -hls_segment_filename seg_%v_%03d.ts {{out_hls}}',
    }),
    // The fetch container unpacks the zip; the concat demuxer joins its clips; the thumbnails leave as one zip.
    client.post('/run-chained-ffmpeg-commands', {
      input_compressed_folder: inputs.url(PUBLIC_IP, shapes.concatZip),
      output_files: { out_joined: 'joined.mp4', out_thumbs: 'thumb_%02d.jpg' },
      compress_outputs: ['out_thumbs'],
      ffmpeg_commands: ['ffmpeg -f concat -i list.txt -c copy {{out_joined}}', 'ffmpeg -i clips/a.mp4 -vf fps=2 {{out_thumbs}}'],
    }),
    client.post('/run-ffmpeg-command', {
      input_compressed_folder: inputs.url(PUBLIC_IP, shapes.slipZip),
      output_files: { out_x: 'x.mp4' },
      ffmpeg_command: 'ffmpeg -i clips/a.mp4 -c copy {{out_x}}',
    }),
    // Far past the lane's cap of 100 output files (release.ts).
    client.post('/run-ffmpeg-command', {
      input_files: { in_video: clipUrl },
      output_files: { out_flood: 'f_%06d.bmp' },
      ffmpeg_command: 'ffmpeg -stream_loop -1 -i {{in_video}} -vf fps=20000,scale=8:8 -frames:v 100000 {{out_flood}}',
    }),
  ])
  const [filtered, ladder, folder, slip, flood] = await Promise.all(submitted.map((s) => client.waitForCommand(s.command_id, TIMEOUT)))

  t.equal(filtered.status, 'SUCCESS', JSON.stringify(filtered))
  const image = async (alias: string) => {
    const name = `${filtered.command_id}-${alias}.png`
    await downloadAndProbe(filtered.output_files[alias].storage_url, dir, name)
    return join(dir, name)
  }
  const [plain, subs, text] = [await image('out_plain'), await image('out_subs'), await image('out_text')]
  t.same(await grayRegion(subs, 'iw:ih/2:0:0'), await grayRegion(plain, 'iw:ih/2:0:0'), 'subtitles: the top half is untouched')
  t.notSame(await grayRegion(subs, 'iw:ih/4:0:ih*3/4'), await grayRegion(plain, 'iw:ih/4:0:ih*3/4'), 'subtitles: the bottom quarter holds the burned-in line')
  t.notSame(await grayRegion(text, 'iw:60:0:0'), await grayRegion(plain, 'iw:60:0:0'), 'drawtext with the font input drew at the top')
  t.same(await grayRegion(text, 'iw:ih/2:0:ih/2'), await grayRegion(plain, 'iw:ih/2:0:ih/2'), 'drawtext: the bottom half is untouched')

  t.equal(ladder.status, 'SUCCESS', JSON.stringify(ladder))
  const hls = ladder.output_files.out_hls
  t.match(hls, { filename: 'master.m3u8', storage_location: 'INTERNAL' })
  t.ok(hls.file_count >= 7 && hls.file_count === hls.files.length, `the master, two variant playlists and two 1 s segments each (${hls.file_count})`)
  t.same(await stored(ladder.command_id), hls.files.map((f: { filename: string }) => `outputs/${ladder.command_id}/${f.filename}`).sort(), 'the upload container stored every file, under the command\'s id')
  const played = await play(hls.storage_url)
  t.ok(played.duration > 1.8 && played.duration < 2.3, `the playlist's storage_url plays the whole 2 s (${played.duration})`)
  t.ok(played.span > 1.8, `every segment was read over HTTP (packets span ${played.span})`)

  t.equal(folder.status, 'SUCCESS', JSON.stringify(folder))
  t.ok(folder.output_files.out_joined.duration > 1.8, `the concat list over the folder's two 1 s clips (${folder.output_files.out_joined.duration})`)
  t.match(folder.output_files.out_thumbs, { filename: 'out_thumbs.zip', mime_type: 'application/zip', file_count: 1 })
  const zipped = await fetch(folder.output_files.out_thumbs.storage_url)
  t.equal(zipped.status, 200, 'the zip downloads')
  const names = (await readZip(Buffer.from(await zipped.arrayBuffer()))).map((e) => e.name)
  t.ok(names.length >= 2 && names.every((name, i) => name === `thumb_${String(i + 1).padStart(2, '0')}.jpg`), `the numbered thumbnails, in order: ${names.join(' ')}`)
  t.same(await stored(folder.command_id), [`outputs/${folder.command_id}/joined.mp4`, `outputs/${folder.command_id}/out_thumbs.zip`])

  t.match(slip, { status: 'FAILED', error_status: 'FOLDER_UNSAFE_ENTRY', error_message: /"\.\." segment/ }, JSON.stringify(slip))
  const slipEnded = await eventually('both containers of the zip-slip pod to end', async () => {
    const [now] = await podsOf(slip.command_id)
    const statuses = now?.status?.containerStatuses ?? []
    return statuses.length === 2 && statuses.every((c) => c.state?.terminated) ? statuses : undefined
  })
  t.equal(slipEnded.find((c) => c.name === 'ffmpeg')?.state?.terminated?.exitCode, 1, 'the ffmpeg container (fetch, then run) refused the zip')
  t.match(flood, { status: 'FAILED', error_status: 'OUTPUT_TOO_MANY_FILES', error_message: /more than 100 files/ }, JSON.stringify(flood))
  t.notOk('output_files' in slip || 'output_files' in flood, 'no output reported for either')
  t.same([...await stored(slip.command_id), ...await stored(flood.command_id)], [], 'nothing of either in the bucket')
})

t.test('a command into a storage destination uploads to the customer\'s bucket through the per-command Secret', async (t) => {
  const customer = await startS3(t, { host: PUBLIC_IP, server: 'minio' })
  const bucket = await customer.createBucket('customer-media')
  // Raw IP endpoints are refused: give the customer's MinIO a name cluster DNS answers (a headless Service without selector).
  const port = Number(new URL(customer.endpoint).port)
  await kubectl(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lane-customer' } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 's3', namespace: 'lane-customer' }, spec: { clusterIP: 'None', ports: [{ name: 'http', port, protocol: 'TCP' }] } },
      {
        apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
        metadata: { name: 's3-1', namespace: 'lane-customer', labels: { 'kubernetes.io/service-name': 's3' } },
        addressType: 'IPv4', endpoints: [{ addresses: [PUBLIC_IP] }], ports: [{ name: 'http', port, protocol: 'TCP' }],
      },
    ],
  }))
  const created = await client.request('POST', '/storage-destinations', {
    name: 'customer',
    endpoint_url: `http://s3.lane-customer.svc.cluster.local:${port}`,
    region: customer.region,
    bucket,
    prefix: 'exports',
    path_style: true,
    credentials: { access_key_id: customer.accessKeyId, secret_access_key: customer.secretAccessKey },
  })
  t.equal(created.status, 201, JSON.stringify(created.body))
  const done = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: clipUrl },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
    storage_destination_id: created.body.storage_destination_id,
  })
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  const key = `exports/${done.command_id}/thumb.jpg`
  t.match(done.output_files.out_thumb, { storage_location: 'EXTERNAL', external_object_key: key, external_uri: `s3://${bucket}/${key}` })
  const s3 = customer.client()
  t.teardown(() => s3.destroy())
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  t.ok((await object.Body!.transformToByteArray()).length > 0, 'the object is in the customer\'s bucket')
  const [pod] = await podsOf(done.command_id)
  const mounts = (c: V1Container) => (c.volumeMounts ?? []).map((m) => m.name)
  const all = [...(pod!.spec!.initContainers ?? []), ...pod!.spec!.containers]
  t.same(all.filter((c) => mounts(c).includes('destination-credentials')).map((c) => c.name), ['upload'], 'only the upload container mounts the destination Secret')
})

t.test('a signed webhook arrives for a finished command and its signature verifies against the raw body', async (t) => {
  const receiver = await startWebhookReceiver(t, PUBLIC_IP)
  const secret = 'lane-webhook-secret-0123456789'
  const put = await client.request('PUT', '/webhook-config', { url: receiver.url, secret })
  t.equal(put.status, 200, JSON.stringify(put.body))
  const done = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: clipUrl },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  t.equal(done.status, 'SUCCESS', JSON.stringify(done))
  const delivery = await receiver.deliveryFor(done.command_id)
  const expected = createHmac('sha256', secret).update(delivery.raw).digest()
  const given = Buffer.from(String(delivery.headers['x-webhook-signature']), 'hex')
  t.ok(given.length === 32 && timingSafeEqual(expected, given), 'X-Webhook-Signature is the HMAC-SHA256 of the raw body')
  const body = JSON.parse(delivery.raw.toString('utf8'))
  t.match(body, { data: { command_id: done.command_id, status: 'SUCCESS' } })
  t.equal(String(body.timestamp), delivery.headers['x-webhook-timestamp'])
  await client.request('DELETE', '/webhook-config')
})

t.test('a command whose ffmpeg fails ends FAILED with the runner\'s reason, and its upload container stops without uploading', async (t) => {
  const done = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: clipUrl },
    output_files: { out_video: 'out.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v nosuchencoder {{out_video}}',
  })
  t.match(done, { status: 'FAILED', error_status: 'FFMPEG_FAILED', error_message: /nosuchencoder/ })
  const mc = await finishedMediaCommand(done.command_id, 'FAILED')
  t.equal(mc.status?.errorStatus, 'FFMPEG_FAILED', 'the MediaCommand carries the runner\'s reason')
  const ended = await eventually('both containers of the pod to end', async () => {
    const [now] = await podsOf(done.command_id)
    const statuses = now?.status?.containerStatuses ?? []
    return statuses.length === 2 && statuses.every((c) => c.state?.terminated) ? statuses : undefined
  })
  t.equal(ended.find((c) => c.name === 'ffmpeg')?.state?.terminated?.exitCode, 1)
  t.equal(ended.find((c) => c.name === 'upload')?.state?.terminated?.exitCode, 0, 'upload read the run\'s failure record and stopped')
  const s3 = release.s3.client()
  t.teardown(() => s3.destroy())
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: release.s3.bucket }))
  t.same((listed.Contents ?? []).map((o) => o.Key).filter((key) => key?.includes(done.command_id)), [], 'nothing of it in managed storage')
})

t.test('a runner pod reaches an allowed address but is refused at the packet level on one the NetworkPolicy forbids, redirected there, with the in-process guard off', async (t) => {
  // Positive control: the same pod network reaches the input server on the allowed address.
  const allowed = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: inputs.url(PUBLIC_IP, clip) },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  t.equal(allowed.status, 'SUCCESS', JSON.stringify(allowed))
  t.ok(inputs.connections.includes(PUBLIC_IP), 'the input server saw the runner on the allowed address')
  const [allowedPod] = await podsOf(allowed.command_id)
  const env = Object.fromEntries((allowedPod!.spec!.containers.find((c) => c.name === 'ffmpeg')!.env ?? []).map((e) => [e.name, e.value]))
  t.equal(env.ALLOW_PRIVATE_NETWORKS, 'true', 'the runner\'s own guard is off: only the NetworkPolicy stands in the way')

  // The same server on the node IP, a private address the policy allows only on the NATS and S3 ports,
  // reached by a redirect from the allowed address (as a hostile URL would). The redirect waits until
  // kube-router has put the runner pod behind the policy: kube-router 2.1 programs a new pod's chain
  // only after its containers start, a window Calico and Cilium do not have
  // (docs/architecture/url-guard.md); a runner that fetched within it would test that window, not the policy.
  const { command_id } = await client.post('/run-ffmpeg-command', {
    input_files: { in_video: inputs.redirect(PUBLIC_IP, 'to-node-ip', inputs.url(cluster.nodeIp, clip)) },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  await inputs.requested('to-node-ip')
  const [pod] = await podsOf(command_id)
  await eventually(`kube-router to put ${pod!.metadata!.name} behind the runner policy`, async () => {
    const rules = await run('iptables-save', [])
    const chain = new RegExp(`POD name:${pod!.metadata!.name} namespace: ${RUNNER_NAMESPACE} to chain (KUBE-POD-FW-\\w+)`).exec(rules)?.[1]
    return chain !== undefined && rules.split('\n').some((rule) => rule.startsWith(`-A ${chain} `) && rule.includes('run through nw policy ffkube-runner'))
  }, TIMEOUT)
  inputs.release('to-node-ip')
  const forbidden = await client.waitForCommand(command_id, TIMEOUT)
  t.equal(forbidden.status, 'FAILED', JSON.stringify(forbidden))
  t.match(forbidden.error_message, /in_video/, 'the error names the input that could not be fetched')
  // Only now, after the command ended: no connection ever reached the canary's private address.
  t.notOk(inputs.connections.includes(cluster.nodeIp), `no connection arrived on ${cluster.nodeIp} (seen: ${inputs.connections.join(', ')})`)
})

t.test('deleting the leading operator pod mid-run hands the Lease to the other replica and the command still ends SUCCESS', async (t) => {
  const leaseHolder = async () => (await kubectl(['-n', RUNNER_NAMESPACE, 'get', 'lease', 'ffkube-operator', '-o', 'jsonpath={.spec.holderIdentity}'])).trim()
  const { command_id } = await client.post('/run-ffmpeg-command', {
    input_files: { in_video: inputs.url(PUBLIC_IP, clip, 'operator-handover') },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  await inputs.requested('operator-handover')
  const leader = await leaseHolder()
  t.match(leader, /^ffkube-operator-/, 'a pod of the operator Deployment holds the Lease')
  await kubectl(['-n', NAMESPACE, 'delete', 'pod', leader, '--wait=false'])
  const next = await eventually('another replica to take the Lease', async () => {
    const holder = await leaseHolder()
    return holder && holder !== leader ? holder : undefined
  }, TIMEOUT)
  t.not(next, leader, `the Lease moved from ${leader} to ${next}`)
  inputs.release('operator-handover')
  const done = await client.waitForCommand(command_id, TIMEOUT)
  t.match(done, { status: 'SUCCESS', output_files: { out_thumb: { filename: 'thumb.jpg', file_type: 'image' } } }, JSON.stringify(done))
  const mc = await finishedMediaCommand(command_id, 'SUCCESS')
  t.match(mc.status, { phase: 'SUCCESS', outputs: [{ alias: 'out_thumb' }] }, 'the MediaCommand finished too')
  await kubectl(['-n', NAMESPACE, 'rollout', 'status', 'deploy/ffkube-operator', '--timeout=3m'])
})

t.test('deleting a runner pod mid-run ends its command FAILED with a clear error', async (t) => {
  const { command_id } = await client.post('/run-ffmpeg-command', {
    input_files: { in_video: inputs.url(PUBLIC_IP, clip, 'pod-deleted') },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  await inputs.requested('pod-deleted')
  const [pod] = await podsOf(command_id)
  await kubectl(['-n', RUNNER_NAMESPACE, 'delete', 'pod', pod!.metadata!.name!, '--wait=false'])
  const done = await client.waitForCommand(command_id, TIMEOUT)
  inputs.release('pod-deleted', 'drop')
  t.equal(done.status, 'FAILED', JSON.stringify(done))
  t.equal(done.error_status, 'POD_LOST', done.error_message)
  t.match(done.error_message, `the runner pod ${pod!.metadata!.name} was deleted before the command finished`)
})

t.test('kubectl get mc shows type, status, progress and duration columns, and Events record each transition', async (t) => {
  const done = await runToEnd('/run-ffmpeg-command', {
    input_files: { in_video: clipUrl },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  t.equal(done.status, 'SUCCESS')
  await finishedMediaCommand(done.command_id, 'SUCCESS')
  const table = await kubectl(['-n', RUNNER_NAMESPACE, 'get', 'mc', done.command_id])
  const [header, row] = table.trim().split('\n').map((line) => line.trim().split(/\s+/))
  t.same(header, ['NAME', 'TYPE', 'STATUS', 'PROGRESS', 'AGE', 'DURATION', 'CANCEL'])
  t.match(row, [done.command_id, 'FFMPEG_COMMAND', 'SUCCESS', '100', /^\d+[smh]/, /^\d+[smh]/])
  t.equal(row!.length, 6, 'the CANCEL column is empty for a command nobody cancelled')
  const wide = await kubectl(['-n', RUNNER_NAMESPACE, 'get', 'mc', done.command_id, '-o', 'wide'])
  t.match(wide.split('\n')[0], /ACCOUNT\s+ERROR/)
  t.match(wide.split('\n')[1], release.accountId)
  // The operator settles a finished command (its Events among it) right after writing its status, which the GET above waited for.
  const events = await kubectlJson<EventList>(['-n', RUNNER_NAMESPACE, 'get', 'events', '--field-selector', `involvedObject.name=${done.command_id}`])
  t.same(events.items.map((e) => e.reason), [], 'a success records no Event: its conditions say it')
  const failedCommand = (await kubectlJson<{ items: Array<{ metadata: { name: string }; status?: { phase?: string; errorStatus?: string } }> }>(['-n', RUNNER_NAMESPACE, 'get', 'mc']))
    .items.find((mc) => mc.status?.phase === 'FAILED' && mc.status?.errorStatus === 'FFMPEG_FAILED')
  t.ok(failedCommand, 'the failed ffmpeg\'s MediaCommand from an earlier subtest')
  const failedEvents = await kubectlJson<EventList>(['-n', RUNNER_NAMESPACE, 'get', 'events', '--field-selector', `involvedObject.name=${failedCommand!.metadata.name}`])
  t.ok(failedEvents.items.some((e) => e.reason === 'Failed' && e.type === 'Warning' && (e.message ?? e.note ?? '').length > 0), 'a failure is a Warning Event that says what happened')
})

interface EventList { items: Array<{ reason: string; type: string; note?: string; message?: string }> }

/** The Events regarding one MediaCommand, once one with `reason` is among them. */
async function eventsWith(commandId: string, reason: string) {
  return eventually(`the ${reason} Event of ${commandId}`, async () => {
    const list = await kubectlJson<EventList>(['-n', RUNNER_NAMESPACE, 'get', 'events', '--field-selector', `involvedObject.name=${commandId}`])
    return list.items.some((e) => e.reason === reason) ? list.items : undefined
  }, TIMEOUT)
}

/** GET, once it says PROCESSING (the runner's first event has been projected). */
async function processing(commandId: string) {
  return eventually(`${commandId} to be PROCESSING`, async () => {
    const { body } = await client.request('GET', `/commands/${commandId}`)
    return body?.status === 'PROCESSING' ? body : undefined
  }, TIMEOUT)
}

t.test('a running command cancelled through the API ends FAILED / CANCELLED: Job and pod deleted, the MediaCommand and a Cancelled Event show it, no output, webhook CANCELLED', async (t) => {
  const receiver = await startWebhookReceiver(t, PUBLIC_IP)
  const put = await client.request('PUT', '/webhook-config', { url: receiver.url, secret: 'lane-cancel-webhook-secret-0123' })
  t.equal(put.status, 200, JSON.stringify(put.body))
  const { command_id } = await client.post('/run-ffmpeg-command', {
    input_files: { in_video: inputs.url(PUBLIC_IP, clip, 'cancel') },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
  })
  // The runner pod is in its fetch phase, waiting at the gate.
  await inputs.requested('cancel')
  await processing(command_id)
  const [pod] = await podsOf(command_id)
  t.ok(pod, 'the runner pod exists when the cancel is sent')
  const cancel = await client.request('POST', `/commands/${command_id}/cancel`)
  t.same(cancel, { status: 200, body: { command_id, status: 'FAILED' } })
  const done = await client.waitForCommand(command_id, TIMEOUT)
  t.match(done, { status: 'FAILED', error_status: 'CANCELLED' }, JSON.stringify(done))

  await eventually('the Job and its pod to be gone', async () => {
    const jobs = await kubectlJson<{ items: unknown[] }>(['-n', RUNNER_NAMESPACE, 'get', 'jobs', '-l', `${LABEL_COMMAND_ID}=${command_id}`])
    return jobs.items.length === 0 && (await podsOf(command_id)).length === 0
  }, TIMEOUT)
  t.pass('no Job and no pod of the command are left')
  const mc = await eventually('the MediaCommand to be FAILED / CANCELLED', async () => {
    const m = await kubectlJson<{ spec: { cancel?: boolean }; status?: { phase?: string; errorStatus?: string } }>(['-n', RUNNER_NAMESPACE, 'get', 'mc', command_id])
    return m.status?.phase === 'FAILED' ? m : undefined
  }, TIMEOUT)
  t.match(mc, { spec: { cancel: true }, status: { phase: 'FAILED', errorStatus: 'CANCELLED' } })
  const row = (await kubectl(['-n', RUNNER_NAMESPACE, 'get', 'mc', command_id, '--no-headers'])).trim().split(/\s+/)
  t.equal(row.at(-1), 'true', `kubectl get mc shows CANCEL true (${row.join(' ')})`)
  const events = await eventsWith(command_id, 'Cancelled')
  t.ok(events.some((e) => e.reason === 'Cancelled' && e.type === 'Warning'), 'a Warning Event with reason Cancelled')
  t.notOk(events.some((e) => e.reason === 'Failed'), 'not recorded as a generic Failed')

  const delivery = await receiver.deliveryFor(command_id)
  const webhook = JSON.parse(delivery.raw.toString('utf8'))
  t.match(webhook, { data: { command_id, status: 'FAILED', error_status: 'CANCELLED' } }, 'the webhook says CANCELLED')
  // The command ended before its run handed anything over to its upload container: nothing of it is in the bucket.
  const s3 = release.s3.client()
  t.teardown(() => s3.destroy())
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: release.s3.bucket }))
  t.same((listed.Contents ?? []).map((o) => o.Key).filter((key) => key?.includes(command_id)), [], 'no object of the command in managed storage')
  inputs.release('cancel', 'drop')
  await client.request('DELETE', '/webhook-config')
})

t.test('max_command_run_seconds becomes the Job\'s activeDeadlineSeconds, and a command held past it ends FAILED / TIMEOUT with a TimedOut Event', async (t) => {
  const { command_id } = await client.post('/run-ffmpeg-command', {
    // Never released before the end: the runner waits at the gate until the Job's deadline stops it.
    input_files: { in_video: inputs.url(PUBLIC_IP, clip, 'deadline') },
    output_files: { out_thumb: 'thumb.jpg' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -frames:v 1 {{out_thumb}}',
    max_command_run_seconds: 2,
  })
  const done = await client.waitForCommand(command_id, TIMEOUT)
  inputs.release('deadline', 'drop')
  t.match(done, { status: 'FAILED', error_status: 'TIMEOUT', error_message: /time limit of 2 seconds/ }, JSON.stringify(done))
  const job = await eventually('the Job to carry its Failed condition', async () => {
    const jobs = await kubectlJson<{ items: V1Job[] }>(['-n', RUNNER_NAMESPACE, 'get', 'jobs', '-l', `${LABEL_COMMAND_ID}=${command_id}`])
    const found = jobs.items[0]
    return found?.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True') ? found : undefined
  }, TIMEOUT)
  t.equal(job.spec?.activeDeadlineSeconds, 2, 'activeDeadlineSeconds is the command\'s limit')
  t.equal(job.status?.conditions?.find((c) => c.type === 'Failed')?.reason, 'DeadlineExceeded', 'the Job controller stopped it at its deadline')
  const mc = await finishedMediaCommand(command_id, 'FAILED')
  t.equal(mc.status?.errorStatus, 'TIMEOUT')
  const events = await eventsWith(command_id, 'TimedOut')
  t.ok(events.some((e) => e.reason === 'TimedOut' && e.type === 'Warning'), 'a Warning Event with reason TimedOut')
  t.notOk(events.some((e) => e.reason === 'Failed'), 'not recorded as a generic Failed')
})

t.test('vcpu_count sets the ffmpeg container\'s CPU limit, and the event stream and logs of the command end with GET\'s state and ffmpeg\'s error line', async (t) => {
  const { command_id } = await client.post('/run-ffmpeg-command', {
    input_files: { in_video: inputs.url(PUBLIC_IP, clip, 'watch') },
    output_files: { out_video: 'out.mp4' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -c:v nosuchencoder {{out_video}}',
    vcpu_count: 0.5,
  })
  await inputs.requested('watch')
  await processing(command_id)
  // While the runner waits at the gate its pod exists: read the limits it really runs with.
  const [pod] = await podsOf(command_id)
  const ffmpeg = pod!.spec!.containers.find((c) => c.name === 'ffmpeg')
  // The limit is the command's; the request stays the operator's (the lane's runners ask 100m), being lower.
  t.same(ffmpeg?.resources?.limits?.cpu, '500m', 'CPU limit of the ffmpeg container')
  t.same(ffmpeg?.resources?.requests?.cpu, '100m', 'CPU request of the ffmpeg container: the operator\'s, below vcpu_count')
  const mc = await kubectlJson<{ spec: { vcpuMillis?: number } }>(['-n', RUNNER_NAMESPACE, 'get', 'mc', command_id])
  t.equal(mc.spec.vcpuMillis, 500, 'the MediaCommand records the limit')

  const stream = await openEventStream(`${release.baseUrl}/api/v1/commands/${command_id}/events`, { 'x-api-key': release.apiKey })
  t.equal(stream.status, 200)
  t.match(stream.contentType, /^text\/event-stream/)
  await stream.next((e) => e.data.status === 'PROCESSING')
  inputs.release('watch')
  const events = await stream.done
  const get = await client.request('GET', `/commands/${command_id}`)
  t.match(get.body, { status: 'FAILED', error_status: 'FFMPEG_FAILED' })
  t.same(events.at(-1)?.data, get.body, 'the stream ends with the state GET returns')
  t.equal(events.filter((e) => e.data.status === 'FAILED').length, 1, 'one terminal event, the last')

  const logs = await eventually('the log to hold ffmpeg\'s error line', async () => {
    const { body } = await client.request('GET', `/commands/${command_id}/logs`)
    return /Unknown encoder 'nosuchencoder'/.test(body?.log ?? '') ? body : undefined
  }, TIMEOUT)
  t.match(logs, { command_id, status: 'FAILED', truncated: false })
  t.match(logs.log, /^==> ffmpeg/m, 'the step is labelled')
  t.notOk(logs.log.includes('/work/'), 'no path of the pod\'s work directory')
  t.notOk(/(^|[\s'"])\/(tmp|home|root|work|app)\//m.test(logs.log), `no absolute path at all:\n${logs.log}`)
})

t.test('through a burst of remuxes, the API, worker, leading operator and a runner pod killed and NATS and the MongoDB-wire server restarted: every command ends SUCCESS or FAILED with a named status, none lost, one webhook each, no status seen going backwards', async (t) => {
  const receiver = await startWebhookReceiver(t, PUBLIC_IP)
  const put = await client.request('PUT', '/webhook-config', { url: receiver.url, secret: 'lane-faults-webhook-secret-0123' })
  t.equal(put.status, 200, JSON.stringify(put.body))
  const remux = (input: string) => ({
    input_files: { in_video: input },
    output_files: { out_video: 'remux.mkv' },
    ffmpeg_command: 'ffmpeg -i {{in_video}} -map 0 -c copy {{out_video}}',
  })
  const watches: Array<{ fault: string; held: boolean; watch: WatchedCommand }> = []
  t.teardown(() => watches.forEach((w) => w.watch.stop()))
  const watch = (fault: string, held: boolean, commandId: string) => watches.push({ fault, held, watch: watchCommand(release, commandId) })
  // Per fault: one command held in its fetch phase through it, two more submitted beside it.
  for (const fault of FAULTS) {
    const gate = `fault-${FAULTS.indexOf(fault)}`
    const held = await client.post('/run-ffmpeg-command', remux(inputs.url(PUBLIC_IP, clip, gate)))
    watch(fault.name, true, held.command_id)
    for (let i = 0; i < 2; i++) watch(fault.name, false, (await client.post('/run-ffmpeg-command', remux(clipUrl))).command_id)
    await inputs.requested(gate)
    await fault.apply({ release, held: held.command_id, openGate: (how) => inputs.release(gate, how) })
    await recovered(release)
    t.comment(`${fault.name}: the release serves again`)
  }
  const deadline = new Promise<'late'>((resolve) => setTimeout(resolve, TIMEOUT, 'late').unref())
  const late = (await Promise.all(watches.map(async (w) => ((await Promise.race([w.watch.ended, deadline])) === 'late' ? w : undefined)))).filter((w) => w)
  t.same(late.map((w) => `${w!.watch.commandId} (${w!.fault}): stream ${w!.watch.streamed.join(' ')}, GET ${w!.watch.polled.at(-1)}`), [], 'no command lost: each ended, as both its event stream and GET show')

  for (const { fault, held, watch: w } of watches) {
    const record = w.last!
    const what = `${w.commandId} (${fault}${held ? ', held through it' : ''})`
    t.comment(`${what}: ${record.status}${record.error_status ? ` ${record.error_status}` : ''}; stream reconnects ${w.reconnects}`)
    t.ok(record.status === 'SUCCESS' || (record.status === 'FAILED' && /^[A-Z_]+$/.test(record.error_status ?? '')), `${what} ended SUCCESS or FAILED with a named status: ${JSON.stringify(record)}`)
    t.same(backwardSteps(w.streamed), [], `${what}: the event stream never went back (${w.streamed.join(' → ')})`)
    t.same(backwardSteps(w.polled), [], `${what}: GET never went back`)
    t.equal(w.streamed.at(-1), record.status, `${what}: the stream ended on GET's status`)
  }
  const runnerKilled = watches.find((w) => w.held && w.fault === 'a runner pod deleted')!
  t.equal(runnerKilled.watch.last?.error_status, 'POD_LOST', 'the command whose runner pod was deleted is POD_LOST')

  for (const { watch: w } of watches) {
    const delivery = await receiver.deliveryFor(w.commandId, TIMEOUT)
    t.match(JSON.parse(delivery.raw.toString('utf8')), { data: { command_id: w.commandId, status: w.last!.status } }, `${w.commandId}: the webhook carries the final status`)
  }
  // A delivery is logged once its POST was answered: after that no attempt of it is left to send.
  for (const { watch: w } of watches) {
    await eventually(`the delivery of ${w.commandId} logged as answered`, async () => {
      const { body } = await client.request('GET', `/webhook-deliveries?command_id=${w.commandId}`)
      return (body?.deliveries ?? []).some((d: { outcome: string }) => d.outcome === 'success')
    }, TIMEOUT)
  }
  const counts = new Map<string, number>()
  for (const d of receiver.deliveries) {
    const id = String(JSON.parse(d.raw.toString('utf8')).data?.command_id)
    counts.set(id, (counts.get(id) ?? 0) + 1)
  }
  t.same(watches.map((w) => w.watch.commandId).filter((id) => counts.get(id) !== 1).map((id) => `${id}: ${counts.get(id) ?? 0}`), [], 'exactly one terminal webhook per command')
  await client.request('DELETE', '/webhook-config')
})

t.test('no pod in the release or runner namespaces runs as root or with a writable root filesystem', async (t) => {
  for (const namespace of [NAMESPACE, RUNNER_NAMESPACE]) {
    const pods = (await kubectlJson<V1PodList>(['-n', namespace, 'get', 'pods'])).items
    t.ok(pods.length > 0, `${namespace} has pods to check`)
    for (const pod of pods) {
      const spec = pod.spec!
      for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
        const where = `${namespace}/${pod.metadata!.name}/${c.name}`
        const uid = c.securityContext?.runAsUser ?? spec.securityContext?.runAsUser
        t.same({
          runAsNonRoot: c.securityContext?.runAsNonRoot ?? spec.securityContext?.runAsNonRoot,
          rootUid: uid === undefined || uid === 0,
          readOnlyRootFilesystem: c.securityContext?.readOnlyRootFilesystem,
          allowPrivilegeEscalation: c.securityContext?.allowPrivilegeEscalation,
        }, { runAsNonRoot: true, rootUid: false, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false }, `${where}: non-root (uid ${uid}), read-only root, no escalation`)
      }
      if (namespace !== NAMESPACE || pod.status?.phase !== 'Running') continue
      // The running processes themselves, not just what the spec asks for.
      const container = spec.containers[0]!.name
      const id = await kubectl(['-n', namespace, 'exec', pod.metadata!.name!, '-c', container, '--', 'id', '-u'])
      t.not(id.trim(), '0', `${pod.metadata!.name}: effective uid ${id.trim()}`)
      const write = await kubectl(['-n', namespace, 'exec', pod.metadata!.name!, '-c', container, '--', 'node', '-e',
        'try { require("fs").writeFileSync("/probe", "x"); console.log("written") } catch (e) { console.log(e.code) }'])
      t.equal(write.trim(), 'EROFS', `${pod.metadata!.name}: writing to / fails with EROFS`)
    }
  }
})
