package rules

import (
	"encoding/hex"
	"math/bits"
	"strings"
)

// ImageFeatures are the hashes of an image or video frame that HASH signals compare
// against. The image pipeline computes them; this package only compares.
type ImageFeatures struct {
	PDQ        [32]byte
	PDQQuality int
	HasPDQ     bool
	MD5, SHA1  string // lower or upper case hex
}

// hashScore scores a HASH signal: PDQ distance d to the reference scores
// 1 - d/(2*max) when d <= max, else 0; md5/sha1 score 1 on equality. -1 when the
// content has no such hash (text, or an image whose PDQ could not be computed).
func hashScore(s *signalPlan, img *ImageFeatures) float64 {
	if img == nil {
		return -1
	}
	switch s.hashAlgo {
	case "pdq":
		if !img.HasPDQ {
			return -1
		}
		d := 0
		for i := range img.PDQ {
			d += bits.OnesCount8(img.PDQ[i] ^ s.hashRef[i])
		}
		if d > s.maxDist {
			return 0
		}
		if s.maxDist == 0 {
			return 1
		}
		return 1 - float64(d)/float64(2*s.maxDist)
	case "md5", "sha1":
		got := img.MD5
		if s.hashAlgo == "sha1" {
			got = img.SHA1
		}
		if got == "" {
			return -1
		}
		if strings.EqualFold(got, hex.EncodeToString(s.hashRef)) {
			return 1
		}
		return 0
	}
	return -1
}
