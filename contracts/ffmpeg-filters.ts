/**
 * The filters a command may use. A filter not listed here is refused, which
 * keeps out every filter that opens a file or a socket by name without a rule
 * of its own — `sendcmd`/`asendcmd` (which can re-init another filter with new
 * options), `zmq`/`azmq`, `frei0r`, `ladspa`, `lv2`, `dnn_*`, `sofalizer`,
 * `removelogo`, `cover_rect`, `find_rect`, `vidstab*`, `signature`,
 * `libvmaf`, `psnr`/`ssim` (stats files), `metadata` (print to file),
 * `showcqt` (font and axis files) — and every filter we have not reviewed.
 * The listed filters whose options name files (subtitles, ass, drawtext,
 * lut3d, lut1d, curves, paletteuse, loudnorm, movie, amovie) are checked
 * option by option by contracts/ffmpeg-filter-files.ts.
 */

const FILTER_NAMES = [
  // geometry and timing
  'scale', 'scale2ref', 'crop', 'cropdetect', 'pad', 'fillborders', 'transpose', 'hflip', 'vflip', 'rotate',
  'setsar', 'setdar', 'fps', 'framerate', 'framestep', 'setpts', 'asetpts', 'trim', 'atrim', 'tpad', 'apad',
  'loop', 'aloop', 'reverse', 'areverse', 'select', 'aselect', 'thumbnail', 'tile', 'zoompan', 'minterpolate',
  'mpdecimate', 'decimate', 'yadif', 'bwdif', 'idet', 'tinterlace', 'interlace', 'setfield', 'setparams',
  // graph plumbing
  'null', 'anull', 'copy', 'split', 'asplit', 'concat', 'format', 'aformat', 'overlay', 'hstack', 'vstack',
  'xstack', 'xfade', 'acrossfade', 'amix', 'amerge', 'pan', 'channelmap', 'channelsplit', 'join',
  'alphamerge', 'alphaextract', 'blend',
  // colour and image
  'eq', 'hue', 'colorchannelmixer', 'colorbalance', 'curves', 'lut', 'lutrgb', 'lutyuv', 'geq', 'negate',
  'unsharp', 'boxblur', 'gblur', 'smartblur', 'hqdn3d', 'nlmeans', 'deband', 'noise', 'vignette', 'histogram',
  'chromakey', 'colorkey', 'fade', 'drawbox', 'drawgrid', 'drawtext', 'palettegen', 'paletteuse',
  // files of the command's own (contracts/ffmpeg-filter-files.ts)
  'subtitles', 'ass', 'lut3d', 'lut1d', 'movie', 'amovie',
  // audio
  'afade', 'volume', 'loudnorm', 'dynaudnorm', 'acompressor', 'alimiter', 'aresample', 'atempo', 'asetrate',
  'highpass', 'lowpass', 'equalizer', 'aecho', 'silenceremove',
  // analysis and visualisation (log to stderr only)
  'silencedetect', 'blackdetect', 'volumedetect', 'ebur128', 'astats', 'showinfo', 'ashowinfo',
  'showwaves', 'showwavespic', 'showspectrum', 'showspectrumpic',
]

/** Allowed filter names. */
export const ALLOWED_FILTERS: ReadonlySet<string> = new Set(FILTER_NAMES)
