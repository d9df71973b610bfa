package rules

import "strings"

// contextOperators is the table of English prepositions accepted between brackets in a
// context condition `a [OP] b`, single- and multi-word, plus the phrasal forms common in
// moderation policies (USED WITH, DIRECTED AT). The built-in evaluator treats them all
// as proximity; the operator matters to a model backend, which receives it verbatim.
var contextOperators = func() map[string]bool {
	list := []string{
		// single-word prepositions
		"aboard", "about", "above", "absent", "across", "after", "against", "along",
		"alongside", "amid", "amidst", "among", "amongst", "anti", "around", "as",
		"astride", "at", "atop", "bar", "barring", "before", "behind", "below",
		"beneath", "beside", "besides", "between", "beyond", "but", "by", "circa",
		"concerning", "considering", "despite", "down", "during", "except",
		"excepting", "excluding", "following", "for", "from", "given", "in",
		"including", "inside", "into", "like", "mid", "minus", "near", "nearer",
		"nearest", "notwithstanding", "of", "off", "on", "onto", "opposite", "out",
		"outside", "over", "past", "pending", "per", "plus", "pro", "re", "regarding",
		"respecting", "round", "save", "saving", "since", "than", "through",
		"throughout", "till", "to", "toward", "towards", "under", "underneath",
		"unlike", "until", "unto", "up", "upon", "versus", "vs", "via", "with",
		"within", "without", "worth", "targeting", "involving", "featuring",
		// multi-word prepositions
		"according to", "ahead of", "along with", "apart from", "as for", "as of",
		"as per", "as to", "as well as", "aside from", "away from", "because of",
		"by means of", "by way of", "close to", "contrary to", "due to", "except for",
		"far from", "in addition to", "in between", "in case of", "in favor of",
		"in favour of", "in front of", "in lieu of", "in place of", "in regard to",
		"in relation to", "in response to", "in spite of", "in terms of", "inside of",
		"instead of", "irrespective of", "near to", "next to", "on account of",
		"on behalf of", "on top of", "out of", "outside of", "owing to", "prior to",
		"regardless of", "subsequent to", "thanks to", "together with", "up against",
		"up to", "with reference to", "with regard to", "with respect to",
		// phrasal forms used in policies
		"used with", "used for", "used against", "used in", "directed at",
		"directed against", "aimed at", "referring to", "related to", "in reply to",
	}
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}()

// lookupOperator canonicalises an operator as written (any case, any spacing).
func lookupOperator(written string) (string, bool) {
	canon := strings.ToLower(strings.Join(strings.Fields(written), " "))
	if contextOperators[canon] {
		return strings.ToUpper(canon), true
	}
	return "", false
}

// closestOperator suggests the known operator nearest to an unknown one by edit
// distance, ties broken alphabetically so the message is stable.
func closestOperator(written string) string {
	w := strings.ToLower(strings.Join(strings.Fields(written), " "))
	best, bestD := "", -1
	for op := range contextOperators {
		d := levenshtein(w, op)
		if bestD < 0 || d < bestD || (d == bestD && op < best) {
			best, bestD = op, d
		}
	}
	return strings.ToUpper(best)
}

// levenshtein is the classic edit distance over runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
