/**
 * The filters a command may use, and the options of those filters that read or
 * write files. A filter not listed here is refused, which keeps out every
 * filter that opens a file or a socket by name — `movie`/`amovie`,
 * `subtitles`/`ass`, `lut1d`/`lut3d`, `sendcmd`/`asendcmd` (which can re-init
 * another filter with new options), `zmq`/`azmq`, `frei0r`, `ladspa`, `lv2`,
 * `dnn_*`, `sofalizer`, `removelogo`, `cover_rect`, `find_rect`,
 * `vidstab*`, `signature`, `libvmaf`, `psnr`/`ssim` (stats files),
 * `metadata` (print to file) — and every filter we have not reviewed.
 */

/** How a filter's options are checked beyond its name. */
export interface FilterRule {
  /** Option names that take a file name: refused whatever their value. */
  forbiddenKeys?: readonly string[]
}

/**
 * Filters that take a file option get it forbidden by key, and positional
 * options are then refused too: a positional value is bound to an option by
 * its order in ffmpeg's source (drawtext's first option is `fontfile`), which
 * the policy does not track.
 */
const FILE_OPTIONS: Record<string, readonly string[]> = {
  drawtext: ['fontfile', 'textfile'],
  curves: ['psfile', 'plot'],
  paletteuse: ['debug_kdtree'],
}

const PLAIN_FILTERS = [
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
  // audio
  'afade', 'volume', 'loudnorm', 'dynaudnorm', 'acompressor', 'alimiter', 'aresample', 'atempo', 'asetrate',
  'highpass', 'lowpass', 'equalizer', 'aecho', 'silenceremove',
  // analysis and visualisation (log to stderr only)
  'silencedetect', 'blackdetect', 'volumedetect', 'ebur128', 'astats', 'showinfo', 'ashowinfo',
  'showwaves', 'showwavespic', 'showspectrum', 'showspectrumpic',
]

/** Allowed filter name → its rule. */
export const ALLOWED_FILTERS: ReadonlyMap<string, FilterRule> = new Map(
  PLAIN_FILTERS.map((name) => {
    const forbiddenKeys = FILE_OPTIONS[name]
    return [name, forbiddenKeys ? { forbiddenKeys } : {}] as const
  }),
)
