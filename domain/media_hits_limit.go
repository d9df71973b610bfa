package domain

import "fmt"

// The bounds on the timed hits of one video or audio item. A long video of
// many scenes, or a transcript of thousands of chunks, against a policy of
// many labels makes a hit for every label of every scene and chunk: stored
// and answered, they would grow without bound with the media. Hits past a
// bound are left out, the earliest on the timeline kept; the report says so
// (rules.Report.HitsTruncated) and its outcomes, scores and labelMatches
// are complete.
const (
	MaxTimedHitsPerLabel = 256
	MaxTimedHitsPerItem  = 4096
)

// TimedHitsTruncatedMessage says what a report whose HitsTruncated is set
// left out, and by which bounds.
var TimedHitsTruncatedMessage = fmt.Sprintf("timed hits were left out: a video or audio item carries at most %d hits per label "+
	"and %d in all, the earliest on its timeline; outcomes, scores and labelMatches are complete",
	MaxTimedHitsPerLabel, MaxTimedHitsPerItem)
