package rules

// wordAutomaton is an Aho-Corasick automaton over words rather than bytes.
//
// Every exact and fuzzy phrase of a plan is a sequence of normalised words, and a
// phrase may only match on word boundaries, so the content is matched as a sequence of
// word ids: one hash lookup maps a word to its id (0 for a word no phrase contains,
// which sends the automaton straight back to its root), and one more finds the
// transition. The cost per word barely depends on the number of phrases, and the
// whole-word rule ("skill" is not "kill") holds by construction.
//
// It is written here rather than taken from a library because the byte-level libraries
// we measured missed the budgets: github.com/petar-dambovaliev/aho-corasick
// builds its DFA in ~270 ms for a 2,000-signal policy (budget 50 ms) and its NFA's
// overlapping scan slows 4x from 100 to 10,000 phrases (budget 2x); a dense byte DFA
// of our own met the build budget but still slowed 4.5x at 10,000 phrases from cache
// misses in its 18 MB table. A differential test checks it against a naive matcher.
type wordAutomaton struct {
	vocab    map[string]uint32 // word -> id, from 1
	next     map[uint64]uint32 // state<<32 | word id -> state (trie edges only)
	fail     []uint32
	own      [][]int32 // patterns ending exactly at a state
	dictLink []uint32  // nearest proper suffix state with output, 0 for none
	hasOut   []bool
	plen     []int32 // pattern lengths in words
}

func edgeKey(s, w uint32) uint64 { return uint64(s)<<32 | uint64(w) }

// newWordAutomaton builds the automaton; pattern i is reported as id i.
func newWordAutomaton(patterns [][]string) *wordAutomaton {
	a := &wordAutomaton{vocab: map[string]uint32{}, next: map[uint64]uint32{}, plen: make([]int32, len(patterns))}
	a.fail = []uint32{0}
	a.own = [][]int32{nil}
	var children [][]uint64 // edge keys per state, for the breadth-first pass
	children = append(children, nil)
	for id, p := range patterns {
		a.plen[id] = int32(len(p))
		s := uint32(0)
		for _, w := range p {
			wid, ok := a.vocab[w]
			if !ok {
				wid = uint32(len(a.vocab) + 1)
				a.vocab[w] = wid
			}
			k := edgeKey(s, wid)
			t, ok := a.next[k]
			if !ok {
				t = uint32(len(a.own))
				a.next[k] = t
				a.own = append(a.own, nil)
				a.fail = append(a.fail, 0)
				children = append(children, nil)
				children[s] = append(children[s], k)
			}
			s = t
		}
		a.own[s] = append(a.own[s], int32(id))
	}
	a.dictLink = make([]uint32, len(a.own))
	a.hasOut = make([]bool, len(a.own))
	queue := make([]uint32, 0, len(a.own))
	for _, k := range children[0] {
		queue = append(queue, a.next[k])
	}
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		f := a.fail[s]
		if len(a.own[f]) > 0 {
			a.dictLink[s] = f
		} else {
			a.dictLink[s] = a.dictLink[f]
		}
		a.hasOut[s] = len(a.own[s]) > 0 || a.dictLink[s] != 0
		for _, k := range children[s] {
			c := a.next[k]
			w := uint32(k)
			if s != 0 {
				a.fail[c] = a.step(f, w)
			}
			queue = append(queue, c)
		}
	}
	return a
}

// step follows the edge for word w from state s, falling back along failure links.
func (a *wordAutomaton) step(s, w uint32) uint32 {
	for {
		if t, ok := a.next[edgeKey(s, w)]; ok {
			return t
		}
		if s == 0 {
			return 0
		}
		s = a.fail[s]
	}
}

// scan reports every occurrence of every pattern in the word-id sequence ids,
// overlapping ones included, calling f with the pattern id and the match's range
// [start, end) in ids.
func (a *wordAutomaton) scan(ids []uint32, f func(id int, start, end int)) {
	s := uint32(0)
	for i, w := range ids {
		if w == 0 {
			s = 0
			continue
		}
		s = a.step(s, w)
		if !a.hasOut[s] {
			continue
		}
		for o := s; o != 0; o = a.dictLink[o] {
			for _, id := range a.own[o] {
				f(int(id), i+1-int(a.plen[id]), i+1)
			}
		}
	}
}

// sepWord stands for a clause boundary inside a word sequence, so a phrase matches
// across one only if it was written with one.
const sepWord = "\n"

// ids maps words to ids, appending to dst.
func (a *wordAutomaton) ids(dst []uint32, word string) []uint32 {
	return append(dst, a.vocab[word])
}
