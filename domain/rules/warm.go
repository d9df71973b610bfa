package rules

import "github.com/jonreiter/govader"

// Warm loads the embedded data every built-in evaluator loads lazily on first use: the
// English word list, the synonym lexicon, the VADER lexicon and the o200k_base
// vocabulary. Together they take a few hundred milliseconds, which a server would
// otherwise add to its first requests; call Warm at start-up to pay it there.
func Warm() {
	dictOnce.Do(loadDict)
	lexOnce.Do(loadLexicon)
	vaderOnce.Do(func() { vader = govader.NewSentimentIntensityAnalyzer() })
	if _, err := encoder(); err != nil {
		panic("rules: o200k_base vocabulary: " + err.Error())
	}
}
