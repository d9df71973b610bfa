package domain

// Timed media in jobs: the analyzer's input and hits, and the job errors of
// its failures. The item runner (domain/evaluation) evaluates media items with them.

// FramePrecheckFor returns the frame precheck of one job: the precheck
// audits every match with the account and job it came from.
type FramePrecheckFor func(accountID, jobID string) FramePrecheck

// IsMediaKind reports whether a content item is timed media.
func IsMediaKind(k ContentKind) bool {
	switch k {
	case ContentVideo, ContentVideoURL, ContentAudio, ContentAudioURL:
		return true
	}
	return false
}
