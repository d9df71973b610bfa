// Package media is the timed-media adapter (docs/api.md#timed-media): it turns a
// video or audio item into frame segments, representative frames and
// transcript chunks by running ffprobe, ffmpeg and pocketsphinx as
// subprocesses, evaluates them through a caller-supplied function, and builds
// the timed label hits with the pure functions of package domain.
//
// It is an adapter like persistence: domain declares what it needs
// (domain.MediaAnalyzer) and cmd wires an *Analyzer in; handlers never import
// this package. Everything that touches the outside world is bounded:
//
//   - Input is written to a private temporary directory that is removed when
//     the analysis returns, whatever happens; the media is never held in
//     memory as a whole beyond the bytes the caller already has (inline
//     content, or a URL body as the safe fetcher returns it).
//   - Every subprocess runs with a deadline, -nostdin, in its own process
//     group (so a timeout kills ffmpeg's helpers too), at a lower CPU
//     priority and under rlimits (CPU time, address space, file size) when
//     the prlimit and nice tools exist; stdout and stderr are read with
//     bounds.
//   - Frames are extracted one at a time as small PNG files through a pipe.
//   - Customer URLs are fetched only through the SSRF-safe fetcher; ffmpeg is
//     only ever given local files (an HLS playlist is downloaded and written
//     anew with local names, hls.go), and refuses every protocol but file.
//   - ffmpeg and ffprobe open a staged file with the container demuxers
//     only (containerDemuxers in probe.go): never a playlist,
//     manifest, concat script, session description or image sequence,
//     whatever its first bytes are, so no input can make them read another
//     file of the server's or a URL.
package media
