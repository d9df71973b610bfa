package imaging

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
)

// MD5Hex returns the lowercase hex MD5 of b. MD5 and SHA-1 are not used for
// security here: they are the keys of the industry hash lists (for example
// those of child-safety clearing houses) that the precheck matches exactly.
func MD5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// SHA1Hex returns the lowercase hex SHA-1 of b (see MD5Hex for why SHA-1).
func SHA1Hex(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// SHA256Hex returns the lowercase hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ContentHash returns the contentHash the API reports for content bytes:
// "sha256::<hex>" (docs/api.md#jobs).
func ContentHash(b []byte) string { return "sha256::" + SHA256Hex(b) }

// Digests are the exact-match digests of one content item.
type Digests struct {
	MD5    string // lowercase hex
	SHA1   string // lowercase hex
	SHA256 string // lowercase hex
}

// Digest computes all three digests of b.
func Digest(b []byte) Digests {
	return Digests{MD5: MD5Hex(b), SHA1: SHA1Hex(b), SHA256: SHA256Hex(b)}
}

// ContentHash returns "sha256::<hex>" from the digests.
func (d Digests) ContentHash() string { return "sha256::" + d.SHA256 }
