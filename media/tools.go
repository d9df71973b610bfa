package media

import (
	"os/exec"
	"strings"
)

// Tools are the external programs the pipeline runs, as found on PATH. An
// empty path means the program is missing.
type Tools struct {
	FFmpeg       string
	FFprobe      string
	Pocketsphinx string // pocketsphinx_continuous, for speech recognition
	// PocketsphinxModel is the en-us acoustic model directory; recognition
	// needs it besides the program.
	PocketsphinxModel string
	Prlimit           string // util-linux prlimit, optional
	Nice              string // optional
}

// pocketsphinxModelDirs are where Debian's pocketsphinx-en-us and upstream
// installs put the default model.
var pocketsphinxModelDirs = []string{
	"/usr/share/pocketsphinx/model/en-us/en-us",
	"/usr/local/share/pocketsphinx/model/en-us/en-us",
}

// FindTools looks the tools up on PATH. It does not run them.
func FindTools() Tools {
	look := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			return ""
		}
		return p
	}
	t := Tools{
		FFmpeg: look("ffmpeg"), FFprobe: look("ffprobe"),
		Pocketsphinx: look("pocketsphinx_continuous"),
		Prlimit:      look("prlimit"), Nice: look("nice"),
	}
	for _, d := range pocketsphinxModelDirs {
		if dirExists(d) {
			t.PocketsphinxModel = d
			break
		}
	}
	return t
}

// VideoReady reports whether video and audio can be decoded at all.
func (t Tools) VideoReady() bool { return t.FFmpeg != "" && t.FFprobe != "" }

// ASRReady reports whether speech recognition can run (besides ffmpeg to
// decode the audio).
func (t Tools) ASRReady() bool {
	return t.VideoReady() && t.Pocketsphinx != "" && t.PocketsphinxModel != ""
}

// MissingForMedia names the tools without which no media job can run.
func (t Tools) MissingForMedia() []string {
	var m []string
	if t.FFmpeg == "" {
		m = append(m, "ffmpeg")
	}
	if t.FFprobe == "" {
		m = append(m, "ffprobe")
	}
	return m
}

// MissingForASR names what speech recognition lacks.
func (t Tools) MissingForASR() []string {
	m := t.MissingForMedia()
	if t.Pocketsphinx == "" {
		m = append(m, "pocketsphinx (pocketsphinx_continuous)")
	} else if t.PocketsphinxModel == "" {
		m = append(m, "the pocketsphinx en-us model (pocketsphinx-en-us)")
	}
	return m
}

// Status is a one-line statement of what the server can do with timed media,
// for the start-up log: an operator who did not install ffmpeg must see it
// before a job fails.
func (t Tools) Status() string {
	switch {
	case !t.VideoReady():
		return "video and audio evaluation unavailable: " + strings.Join(t.MissingForMedia(), ", ") +
			" not found on PATH (install with: make media-tools)"
	case !t.ASRReady():
		return "video and audio evaluation available; speech recognition unavailable (" +
			strings.Join(t.MissingForASR(), ", ") + " missing): audio and videos without captions have no transcript"
	}
	return "video and audio evaluation available, with speech recognition"
}
