package rules

// Counting o200k_base tokens in time linear in the text (up to a log factor).
//
// tiktoken-go merges the byte pairs of a piece by rescanning the whole piece for its
// lowest-ranked pair after every merge, which is quadratic in the piece: a 60,000-letter
// word, or a comment of one, is a single piece of the pre-tokenizer and took seconds
// to count. This file keeps the same vocabulary, the same pre-tokenizer and the same
// merge order (always the lowest rank, the leftmost of equal ranks), so the counts are
// tiktoken's, but finds each next merge with a heap.

import (
	"strings"

	"github.com/dlclark/regexp2"
)

// o200kPattern is the pre-tokenizer of o200k_base, as OpenAI's tiktoken defines it: BPE
// never merges across the pieces it cuts.
var o200kPattern = strings.Join([]string{
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`\p{N}{1,3}`,
	` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
	`\s*[\r\n]+`,
	`\s+(?!\S)`,
	`\s+`,
}, "|")

// bpeCounter counts the tokens of a byte-pair encoding.
type bpeCounter struct {
	ranks map[string]int // token bytes to rank: a lower rank merges first
	split *regexp2.Regexp
}

func newBPECounter(ranks map[string]int, pattern string) (*bpeCounter, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	return &bpeCounter{ranks: ranks, split: re}, nil
}

// count returns the number of tokens of s.
func (b *bpeCounter) count(s string) int {
	n, _ := b.countWork(s)
	return n
}

// countWork returns the number of tokens of s and the work of merging its pieces:
// vocabulary lookups and heap steps, which is what would grow quadratically if a
// merge rescanned its piece.
func (b *bpeCounter) countWork(s string) (tokens, work int) {
	// The pre-tokenizer has no timeout and the pattern has no nested quantifiers, so
	// matching does not fail.
	m, _ := b.split.FindStringMatch(s)
	for m != nil {
		tokens += b.pieceTokens(m.String(), &work)
		m, _ = b.split.FindNextMatch(m)
	}
	return tokens, work
}

// mergeQueue is a binary min-heap of merge candidates, each a pair of adjacent parts
// packed as rank<<32 | start, so the lowest rank comes first and, among equal ranks,
// the leftmost: the order tiktoken merges in. It is written out rather than used
// through container/heap, whose interface calls and boxing were half of the time.
type mergeQueue struct {
	h     []uint64
	steps *int // heap levels walked, the queue's share of the work
}

func packCandidate(rank, start int) uint64 { return uint64(rank)<<32 | uint64(start) }

func unpackCandidate(c uint64) (rank, start int) { return int(c >> 32), int(c & (1<<32 - 1)) }

func (q *mergeQueue) push(c uint64) {
	q.h = append(q.h, c)
	for i := len(q.h) - 1; i > 0; {
		*q.steps++
		parent := (i - 1) / 2
		if q.h[parent] <= q.h[i] {
			break
		}
		q.h[i], q.h[parent] = q.h[parent], q.h[i]
		i = parent
	}
}

func (q *mergeQueue) pop() uint64 {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	q.down(0)
	return top
}

func (q *mergeQueue) down(i int) {
	h := q.h
	for {
		*q.steps++
		least := i
		if l := 2*i + 1; l < len(h) && h[l] < h[least] {
			least = l
		}
		if r := 2*i + 2; r < len(h) && h[r] < h[least] {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}

func (q *mergeQueue) init() {
	for i := len(q.h)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// noPair marks a part with no mergeable pair to its right.
const noPair = -1

// pieceTokens returns the number of tokens BPE encodes one piece into. Parts are
// identified by their start offset: next[i] is the start of the part after the one
// starting at i (len(piece) for the last), and pairRank[i] the rank of the token that
// part and the next one would merge into, noPair once the part has merged into its
// left neighbour. A queued candidate is stale once its rank is no longer its part's
// pair rank: ranks name distinct byte strings, so an unchanged rank is an unchanged
// pair.
func (b *bpeCounter) pieceTokens(piece string, work *int) int {
	n := len(piece)
	if n <= 1 {
		return n
	}
	*work++
	if _, ok := b.ranks[piece]; ok {
		return 1
	}
	next, prev, pairRank := make([]int32, n), make([]int32, n), make([]int32, n)
	q := mergeQueue{h: make([]uint64, 0, n), steps: work}
	for i := range n {
		next[i], prev[i], pairRank[i] = int32(i+1), int32(i-1), noPair
		if i+2 <= n {
			*work++
			if r, ok := b.ranks[piece[i:i+2]]; ok {
				pairRank[i] = int32(r)
				q.h = append(q.h, packCandidate(r, i))
			}
		}
	}
	q.init()
	// rerank looks up the pair of the part at i after a merge changed it.
	rerank := func(i int) {
		pairRank[i] = noPair
		j := int(next[i])
		if j >= n {
			return
		}
		*work++
		if r, ok := b.ranks[piece[i:next[j]]]; ok {
			pairRank[i] = int32(r)
			q.push(packCandidate(r, i))
		}
	}
	parts := n
	for len(q.h) > 0 {
		rank, i := unpackCandidate(q.pop())
		if int(pairRank[i]) != rank {
			continue
		}
		right := next[i]
		next[i] = next[right]
		if int(next[i]) < n {
			prev[next[i]] = int32(i)
		}
		pairRank[right] = noPair
		parts--
		rerank(i)
		if p := prev[i]; p >= 0 {
			rerank(int(p))
		}
	}
	return parts
}
