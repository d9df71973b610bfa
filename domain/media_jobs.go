package domain

// Timed media in jobs: the analyzer's input and hits, and the job errors of
// its failures. The ItemRunner evaluates media items with them.

// FramePrecheckFor returns the frame precheck of one job: the precheck
// audits every match with the account and job it came from.
type FramePrecheckFor func(accountID, jobID string) FramePrecheck

// isMediaKind reports whether a content item is timed media.
func IsMediaKind(k ContentKind) bool {
	switch k {
	case ContentVideo, ContentVideoURL, ContentAudio, ContentAudioURL:
		return true
	}
	return false
}

// MediaInputOf maps a video or audio content item to the analyzer's input.
// An empty captions field means no captions: an empty string is not a
// WebVTT file, and a client that sends "" has no transcript to give.
func MediaInputOf(it ContentItem) (MediaInput, bool) {
	in := MediaInput{Captions: it.Captions, HasCaptions: it.Captions != ""}
	switch it.Kind {
	case ContentVideo:
		in.Kind, in.Data = MediaVideo, it.Bytes
	case ContentVideoURL:
		in.Kind, in.URL = MediaVideo, it.URL
	case ContentAudio:
		in.Kind, in.Data = MediaAudio, it.Bytes
	case ContentAudioURL:
		in.Kind, in.URL = MediaAudio, it.URL
	default:
		return MediaInput{}, false
	}
	return in, true
}

// TimedLabelHits numbers the timed hits of one result for storage, in the
// order the analysis produced them (ascending start), continuing *seq.
func TimedLabelHits(jobID, resultID string, hits []TimedHit, seq *int) []*LabelHit {
	out := make([]*LabelHit, 0, len(hits))
	for _, h := range hits {
		m := ModalityVideo
		if h.Kind == MediaAudio {
			m = ModalityAudio
		}
		out = append(out, &LabelHit{
			JobID: jobID, JobResultID: resultID, Seq: *seq,
			Label: h.Label, Modality: m, Score: h.Score,
			StartMs: h.StartMs, EndMs: h.EndMs,
			FrameStartMs: h.FrameStartMs, FrameEndMs: h.FrameEndMs,
			TranscriptStartMs: h.TranscriptStartMs, TranscriptEndMs: h.TranscriptEndMs, Spans: h.Spans,
		})
		*seq++
	}
	return out
}
