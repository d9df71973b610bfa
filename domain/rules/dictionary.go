package rules

// The embedded English dictionary that fuzzy matching consults, with its Bloom
// filter and lock-free cache.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// englishWordsGz is the word list of the npm package an-array-of-english-words
// (MIT, see data/english-words.LICENSE). Fuzzy matching consults it so that a correctly
// spelled word is never taken for an obfuscated one ("lover" is not "loser").
//
//go:embed data/english-words.txt.gz
var englishWordsGz []byte

var (
	dictOnce sync.Once
	// dict holds 64-bit hashes of the words rather than the words: a map without
	// pointers is not scanned by the garbage collector, which would otherwise walk
	// 275,000 strings on every cycle of a busy server. A false positive needs a 64-bit
	// collision among 275,000 words.
	dict     map[uint64]struct{}
	dictSeed = maphash.MakeSeed()
	// dictBloom is a Bloom filter of the same hashes (2 bits a word in 4 Mbit, 512 KiB,
	// about 1.5% false positives): compound splitting asks about many substrings that
	// are no word, and the filter answers most of them from the CPU caches without
	// touching the map or evicting content words from dictCache.
	dictBloom []uint64
)

const dictBloomBits = 1 << 22

func bloomBits(h uint64) (uint64, uint64) {
	return h & (dictBloomBits - 1), (h >> 32) & (dictBloomBits - 1)
}

func dictHash(w string) uint64 { return maphash.String(dictSeed, w) }

func loadDict() {
	dict = make(map[uint64]struct{}, 280000)
	dictBloom = make([]uint64, dictBloomBits/64)
	zr, err := gzip.NewReader(bytes.NewReader(englishWordsGz))
	if err != nil {
		panic("rules: embedded word list is corrupt: " + err.Error())
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		h := dictHash(sc.Text())
		dict[h] = struct{}{}
		a, b := bloomBits(h)
		dictBloom[a/64] |= 1 << (a % 64)
		dictBloom[b/64] |= 1 << (b % 64)
	}
	if err := sc.Err(); err != nil {
		panic("rules: embedded word list is corrupt: " + err.Error())
	}
}

// dictCache is a direct-mapped cache in front of dict: the map is megabytes, so most
// probes miss the CPU caches, while content repeats the same few hundred words. Each
// entry is a word hash with its lowest bit replaced by the answer; entries are read and
// written atomically, so concurrent evaluations share it without locks.
var dictCache [8192]atomic.Uint64

// isDictWord reports whether a normalised word is a correctly spelled English word.
func isDictWord(w string) bool {
	dictOnce.Do(loadDict)
	h := dictHash(w)
	slot := &dictCache[h%uint64(len(dictCache))]
	if e := slot.Load(); e != 0 && e>>1 == h>>1 {
		return e&1 == 1
	}
	_, ok := dict[h]
	e := h &^ 1
	if ok {
		e |= 1
	}
	slot.Store(e)
	return ok
}

// maybeDictWord is isDictWord for words that are mostly not words: the Bloom filter
// turns most of them away before the cache and the map.
func maybeDictWord(w string) bool {
	dictOnce.Do(loadDict)
	a, b := bloomBits(dictHash(w))
	if dictBloom[a/64]&(1<<(a%64)) == 0 || dictBloom[b/64]&(1<<(b%64)) == 0 {
		return false
	}
	return isDictWord(w)
}

// A token's dictionary status, once apply or splitCompounds has looked it up.
const (
	dictUnknown int8 = iota
	dictNo
	dictYes
)
