import t from 'tap'
import { unavailableVideos, videoUrlProblem } from '../../api/commands/video-urls.js'

t.test('flags YouTube and Vimeo links whose video id is malformed', async (t) => {
  const cases: [string, RegExp | null][] = [
    ['https://www.youtube.com/watch?v=dQw4w9WgXcQ', null],
    ['https://youtu.be/dQw4w9WgXcQ?t=3', null],
    ['https://www.youtube.com/shorts/dQw4w9WgXcQ', null],
    ['https://www.youtube.com/@somechannel', null],
    ['https://www.youtube.com/playlist?list=PL123', null],
    ['https://vimeo.com/76979871', null],
    ['https://player.vimeo.com/video/76979871', null],
    ['https://vimeo.com/channels/staffpicks', null],
    ['https://example.com/watch?v=x', null],
    ['https://www.youtube.com/watch?v=short', /"short" is not a YouTube video id/],
    ['https://www.youtube.com/watch', /"" is not a YouTube video id/],
    ['https://youtu.be/dQw4w9WgXcQ-too-long', /not a YouTube video id/],
    ['https://m.youtube.com/shorts/a$b', /not a YouTube video id/],
    ['https://vimeo.com/7697x9871', /not a Vimeo video id/],
  ]
  for (const [url, problem] of cases) {
    if (problem) t.match(videoUrlProblem(url), problem, url)
    else t.equal(videoUrlProblem(url), null, url)
  }
})

t.test('lists every unavailable URL in one message', async (t) => {
  t.equal(unavailableVideos({ in_a: 'https://youtu.be/dQw4w9WgXcQ' }, 'input_urls'), null)
  const message = unavailableVideos({ in_a: 'https://youtu.be/bad', in_b: 'https://youtu.be/dQw4w9WgXcQ', in_c: 'https://www.youtube.com/watch?v=x' }, 'input_urls')
  t.match(message, /^input_urls: these URLs are unavailable: in_a: .*; in_c: /)
  t.notMatch(message, /in_b/)
})
