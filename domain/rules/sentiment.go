package rules

import (
	"sync"

	"github.com/jonreiter/govader"
)

var (
	vaderOnce sync.Once
	vader     *govader.SentimentIntensityAnalyzer
)

// sentimentScores scores each sentence with VADER (a lexicon and rule based model,
// from the govader port) and returns per-sentence scores for the wanted polarity:
// negative = max(0, -compound), positive = max(0, compound), neutral = 1 - |compound|.
// A text is as negative as its most negative sentence, so one abusive sentence in a
// long friendly message still counts.
func sentimentScores(text string, spans [][2]int, want string) []float64 {
	vaderOnce.Do(func() { vader = govader.NewSentimentIntensityAnalyzer() })
	out := make([]float64, len(spans))
	for i, sp := range spans {
		c := vader.PolarityScores(text[sp[0]:sp[1]]).Compound
		switch want {
		case "negative":
			out[i] = max(0, -c)
		case "positive":
			out[i] = max(0, c)
		default:
			if c < 0 {
				c = -c
			}
			out[i] = 1 - c
		}
	}
	return out
}
