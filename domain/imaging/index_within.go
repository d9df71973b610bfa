package imaging

import "math/bits"

// Within calls fn for every hash of the index within maxDist of h, each
// once, in no particular order, until fn returns false. Unlike Nearest it
// sees every list holding a near hash, which per-list bands and allow lists
// need.
func (ix *Index) Within(h Hash, maxDist int, fn func(Match) bool) {
	if ix == nil || ix.n == 0 || maxDist < 0 {
		return
	}
	q := h.words()
	dist := func(pos int) int {
		w := ix.words[4*pos : 4*pos+4 : 4*pos+4]
		return bits.OnesCount64(w[0]^q[0]) + bits.OnesCount64(w[1]^q[1]) +
			bits.OnesCount64(w[2]^q[2]) + bits.OnesCount64(w[3]^q[3])
	}
	r := maxDist / mihKeyBits
	if !ix.mih || r > mihMaxRadius {
		for pos := range ix.n {
			if d := dist(pos); d <= maxDist && !fn(ix.match(pos, d)) {
				return
			}
		}
		return
	}
	var qk [mihTables]uint16
	for t := range qk {
		qk[t] = substring(q, t)
	}
	// Pigeonhole twice: a hash within maxDist is within chunkR of h on one
	// of the eight 32-bit chunks, and within r on one half of that chunk.
	// So it is in that half's table at radius <= r, and its chunk (the
	// probed half plus the partner half of the posting) is within chunkR:
	// a candidate whose chunk is farther is refused without reading its
	// hash. A match is reported from the first table where both hold.
	chunkR := maxDist / 8
	inChunk := func(w [4]uint64, t int) bool {
		return bits.OnesCount16(substring(w, t)^qk[t]) <= r &&
			bits.OnesCount16(substring(w, t)^qk[t])+bits.OnesCount16(substring(w, t^1)^qk[t^1]) <= chunkR
	}
	visit := func(pos, t int) bool {
		d := dist(pos)
		if d > maxDist {
			return true
		}
		w := ix.wordsAt(pos)
		for u := range t {
			if inChunk(w, u) {
				return true // reported from table u
			}
		}
		return fn(ix.match(pos, d))
	}
	for t := range mihTables {
		off, post := ix.offsets[t], ix.postings[t]
		for wt := 0; wt <= r; wt++ {
			room := chunkR - wt // the partner half's budget
			for _, m := range masksByWeight[wt] {
				k := qk[t] ^ m
				lo, hi := off[k], off[int(k)+1]
				for i := lo; i < hi; i++ {
					var pos int
					var partner uint16
					if t == 0 {
						pos = int(i)
						partner = substring(ix.wordsAt(pos), 1)
					} else {
						pos, partner = posting(post, i)
					}
					if bits.OnesCount16(partner^qk[t^1]) > room {
						continue
					}
					if !visit(pos, t) {
						return
					}
				}
			}
		}
	}
}
