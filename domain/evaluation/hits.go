package evaluation

import (
	"sort"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// The hits of an item: the sections a text or image item was hit by, and
// the timed hits of a video or audio item, built from the labels its
// frames and transcript chunks were hit by (docs/api.md#timed-media),
// bounded and numbered for storage.

// MediaInputOf maps a video or audio content item to the analyzer's input.
// An empty captions field means no captions: an empty string is not a
// WebVTT file, and a client that sends "" has no transcript to give.
func MediaInputOf(it domain.ContentItem) (domain.MediaInput, bool) {
	in := domain.MediaInput{Captions: it.Captions, HasCaptions: it.Captions != ""}
	switch it.Kind {
	case domain.ContentVideo:
		in.Kind, in.Data = domain.MediaVideo, it.Bytes
	case domain.ContentVideoURL:
		in.Kind, in.URL = domain.MediaVideo, it.URL
	case domain.ContentAudio:
		in.Kind, in.Data = domain.MediaAudio, it.Bytes
	case domain.ContentAudioURL:
		in.Kind, in.URL = domain.MediaAudio, it.URL
	default:
		return domain.MediaInput{}, false
	}
	return in, true
}

// TimedLabelHits numbers the timed hits of one result for storage, in the
// order the analysis produced them (ascending start), continuing *seq.
func TimedLabelHits(jobID, resultID string, hits []domain.TimedHit, seq *int) []*domain.LabelHit {
	out := make([]*domain.LabelHit, 0, len(hits))
	for _, h := range hits {
		m := domain.ModalityVideo
		if h.Kind == domain.MediaAudio {
			m = domain.ModalityAudio
		}
		out = append(out, &domain.LabelHit{
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

// LimitTimedHits returns the hits within the bounds, in their order (the
// timeline's), and whether any were left out. It keeps hits' own backing
// array.
func LimitTimedHits(hits []domain.TimedHit) ([]domain.TimedHit, bool) {
	perLabel := map[string]int{}
	out := hits[:0]
	cut := false
	for _, h := range hits {
		if len(out) == domain.MaxTimedHitsPerItem || perLabel[h.Label] == domain.MaxTimedHitsPerLabel {
			cut = true
			continue
		}
		perLabel[h.Label]++
		out = append(out, h)
	}
	clear(hits[len(out):]) // the spans of the hits left out are not held
	return out, cut
}

func ptr(v int64) *int64 { return &v }

// VideoHits builds the hits of one video from the per-segment frame labels
// and the per-chunk transcript labels, exactly as docs/api.md#timed-media
// states:
//
//   - A frame hit (a label hit by a segment's representative frame) is
//     point-in-time: StartMs is the start of its segment — the segment is the
//     occurrence, and its start is stable whichever frame inside it was
//     sampled — and EndMs is absent. FrameStartMs/FrameEndMs are the segment
//     bounds; there is no transcript, so the transcript fields are absent.
//   - A transcript hit (a label hit by a chunk's text) yields one occurrence
//     per frame segment the chunk overlaps: StartMs/EndMs are the overlap of
//     the two, FrameStartMs/FrameEndMs the whole segment and
//     TranscriptStartMs/TranscriptEndMs the whole chunk. A zero-length chunk
//     (a point cue) overlaps the segment that contains its instant and is a
//     point-in-time occurrence there. A chunk outside every segment (captions
//     that run past the end of the picture) still reports its hit, with the
//     chunk as its range and no frame fields, because dropping a hit would
//     hide a violation.
//
// Hits are in ascending StartMs; at equal starts point-in-time hits come
// first, then shorter ranges, and otherwise the order of construction (frame
// hits before transcript hits, segments and chunks in timeline order, labels
// in document order), so the order is deterministic (the label-hits
// endpoint pages in a stable order). segments must be sorted and non-overlapping, as the
// scene detector produces them.
func VideoHits(frames []domain.FrameLabels, chunks []domain.ChunkLabels) []domain.TimedHit {
	var hits []domain.TimedHit
	for _, f := range frames {
		for _, l := range f.Labels {
			hits = append(hits, domain.TimedHit{
				Label: l.Label, Kind: domain.MediaVideo, Score: l.Score,
				StartMs:      f.Segment.StartMs,
				FrameStartMs: ptr(f.Segment.StartMs), FrameEndMs: ptr(f.Segment.EndMs),
			})
		}
	}
	for _, c := range chunks {
		if len(c.Labels) == 0 {
			continue
		}
		matched := false
		for k, f := range frames {
			start, end, ok := overlap(f.Segment, c.Chunk, k == len(frames)-1)
			if !ok {
				continue
			}
			matched = true
			for _, l := range c.Labels {
				h := domain.TimedHit{
					Label: l.Label, Kind: domain.MediaVideo, Score: l.Score,
					StartMs:      start,
					FrameStartMs: ptr(f.Segment.StartMs), FrameEndMs: ptr(f.Segment.EndMs),
					TranscriptStartMs: ptr(c.Chunk.StartMs), TranscriptEndMs: ptr(c.Chunk.EndMs), Spans: l.Spans,
				}
				if end > start {
					h.EndMs = ptr(end)
				}
				hits = append(hits, h)
			}
		}
		if !matched {
			for _, l := range c.Labels {
				h := domain.TimedHit{
					Label: l.Label, Kind: domain.MediaVideo, Score: l.Score,
					StartMs:           c.Chunk.StartMs,
					TranscriptStartMs: ptr(c.Chunk.StartMs), TranscriptEndMs: ptr(c.Chunk.EndMs), Spans: l.Spans,
				}
				if c.Chunk.EndMs > c.Chunk.StartMs {
					h.EndMs = ptr(c.Chunk.EndMs)
				}
				hits = append(hits, h)
			}
		}
	}
	sortHits(hits)
	return hits
}

// overlap returns the intersection of a segment [s, e) and a chunk [cs, ce).
// A zero-length chunk overlaps the segment containing its instant; the end
// of the last segment counts as inside it, so a point cue at the very end of
// the video is not lost.
func overlap(seg domain.FrameSegment, c domain.TranscriptChunk, last bool) (start, end int64, ok bool) {
	if c.EndMs <= c.StartMs {
		if c.StartMs >= seg.StartMs && (c.StartMs < seg.EndMs || (last && c.StartMs == seg.EndMs)) {
			return c.StartMs, c.StartMs, true
		}
		return 0, 0, false
	}
	start, end = max(seg.StartMs, c.StartMs), min(seg.EndMs, c.EndMs)
	if start >= end {
		return 0, 0, false
	}
	return start, end, true
}

// AudioHits builds the hits of an audio item: one ranged hit per label per
// chunk, with the chunk's start and end (docs/api.md#timed-media: audio hits use the
// chunk start), and no frame or transcript fields (they are video only). A
// zero-length chunk has no end bound, so EndMs is absent for it.
func AudioHits(chunks []domain.ChunkLabels) []domain.TimedHit {
	var hits []domain.TimedHit
	for _, c := range chunks {
		for _, l := range c.Labels {
			h := domain.TimedHit{Label: l.Label, Kind: domain.MediaAudio, Score: l.Score, StartMs: c.Chunk.StartMs, Spans: l.Spans}
			if c.Chunk.EndMs > c.Chunk.StartMs {
				h.EndMs = ptr(c.Chunk.EndMs)
			}
			hits = append(hits, h)
		}
	}
	sortHits(hits)
	return hits
}

// sortHits orders hits by start, point-in-time before ranged, then by end;
// the sort is stable so construction order breaks the remaining ties.
func sortHits(hits []domain.TimedHit) {
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.StartMs != b.StartMs {
			return a.StartMs < b.StartMs
		}
		if (a.EndMs == nil) != (b.EndMs == nil) {
			return a.EndMs == nil
		}
		if a.EndMs != nil && *a.EndMs != *b.EndMs {
			return *a.EndMs < *b.EndMs
		}
		return false
	})
}

// MergeReports combines the reports of the evaluations of one media item
// (one per frame and one per transcript chunk) into the item's report: a
// section takes its TRUE evaluation with the highest score when it was TRUE
// anywhere, else its best evaluation that did not fail, else its first.
// Frame evaluations fail text-only sections (a frame has no text) and chunk
// evaluations fail hash sections, so "best that did not fail" keeps a
// section from being reported FAILED merely because the other modality
// cannot evaluate it. The document result follows docs/rules.md#scores-and-outcomes: TRUE if any
// section is TRUE, else FAILED if any failed, else FALSE. Token usage adds
// up; flagged spans are bounded as in one report (rules.LimitSpans). It
// returns nil for no reports.
func MergeReports(reports []*rules.Report) *rules.Report {
	var first *rules.Report
	for _, r := range reports {
		if r != nil {
			first = r
			break
		}
	}
	if first == nil {
		return nil
	}
	out := &rules.Report{Threshold: first.Threshold, Exception: first.Exception, LabelMatches: map[string]float64{}}
	out.Sections = make([]rules.SectionReport, len(first.Sections))
	rank := func(s rules.SectionReport) int {
		switch s.Result {
		case rules.OutcomeTrue:
			return 2
		case rules.OutcomeFalse:
			return 1
		}
		return 0
	}
	for i := range first.Sections {
		best := first.Sections[i]
		for _, r := range reports {
			if r == nil || i >= len(r.Sections) {
				continue
			}
			s := r.Sections[i]
			if rank(s) > rank(best) || (rank(s) == rank(best) && s.Score > best.Score) {
				best = s
			}
		}
		out.Sections[i] = best
	}
	for _, r := range reports {
		if r == nil {
			continue
		}
		out.TokenUsage.InputTokens += r.TokenUsage.InputTokens
		out.TokenUsage.BilledTokens += r.TokenUsage.BilledTokens
		out.TokenUsage.Multiplier = max(out.TokenUsage.Multiplier, r.TokenUsage.Multiplier)
		if r.Exception != nil && r.Exception.Result == rules.OutcomeTrue {
			out.Exception = r.Exception
		}
		out.SpansTruncated = out.SpansTruncated || r.SpansTruncated
	}
	out.Result = rules.OutcomeFalse
	failed := false
	for _, s := range out.Sections {
		switch s.Result {
		case rules.OutcomeTrue:
			out.Result = rules.OutcomeTrue
			out.LabelMatches[s.Name] = s.Score
		case rules.OutcomeFailed:
			failed = true
		}
	}
	if out.Result != rules.OutcomeTrue && failed {
		out.Result = rules.OutcomeFailed
	}
	// Sections taken from different chunks bring the spans of each.
	return rules.LimitSpans(out)
}

// sectionHits returns the label hits of a text or image result: one per
// TRUE section, in report order, at startMs 0.
func sectionHits(jobID, resultID string, modality domain.Modality, rep *rules.Report, seq *int) []*domain.LabelHit {
	var hits []*domain.LabelHit
	for _, s := range rep.Sections {
		if s.Result != rules.OutcomeTrue {
			continue
		}
		hits = append(hits, &domain.LabelHit{
			JobID: jobID, JobResultID: resultID, Seq: *seq, Label: s.Name,
			Modality: modality, Score: s.Score, StartMs: 0, Spans: s.FlaggedSpans(),
		})
		*seq++
	}
	return hits
}
