import t from 'tap'
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { PresignedGets } from '../../api/files/managed-urls.js'

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' }
const clients: [string, S3Client][] = [
  ['a path-style endpoint with a port (MinIO)', new S3Client({ endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', forcePathStyle: true, credentials })],
  ['a virtual-hosted endpoint', new S3Client({ endpoint: 'https://s3.example.com', region: 'eu-west-3', credentials })],
  ['AWS itself', new S3Client({ region: 'us-west-2', credentials })],
  ['temporary credentials', new S3Client({ endpoint: 'https://s3.example.com', region: 'auto', forcePathStyle: true, credentials: { ...credentials, sessionToken: 'token/with+chars=' } })],
]
const keys = ['outputs/c1/seg_000.ts', 'outputs/c1/v0/prog.m3u8', "outputs/c1/a b+c=d&e'(1)!*~.ts", 'outputs/c1/ünïcode €.mp4', 'uploads/acc/file_1/My_Clip.mp4']

t.test('gives the very URL getSignedUrl gives for the same key and signing time', async (t) => {
  const signingDate = new Date('2026-11-27T08:00:00Z')
  for (const [name, s3] of clients) {
    const gets = await PresignedGets.of(s3, 'ffkube-test', 604800)
    for (const key of keys) {
      const slow = await getSignedUrl(s3, new GetObjectCommand({ Bucket: 'ffkube-test', Key: key }), { expiresIn: 604800, signingDate })
      t.equal(await gets.url(key, signingDate), slow, `${name}: ${key}`)
    }
  }
})
