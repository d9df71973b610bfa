package persistence

import (
	"crypto/ed25519"
	"testing"

	"github.com/contenteval/contenteval/domain"
)

// FuzzOpenReviewContent: whatever bytes a review item's content column
// holds (altered, truncated, copied from another account), opening them
// fails cleanly or yields content; it never panics. Sealed content opens
// to what was sealed.
func FuzzOpenReviewContent(f *testing.F) {
	seed := make([]byte, ed25519.SeedSize)
	aead, err := newAEAD(ed25519.NewKeyFromSeed(seed), reviewContentKeyInfo)
	if err != nil {
		f.Fatal(err)
	}
	box := &contentBox{aead: aead}
	sealed, err := box.sealContent("a1", &domain.ContentItem{Kind: domain.ContentText, Text: "hello"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed, "a1")
	f.Add(sealed, "a2")
	f.Add(sealed[:10], "a1")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, b []byte, account string) {
		c, err := box.openContent(account, b)
		if err == nil && c == nil {
			t.Fatal("no error and no content")
		}
		if account == "a1" && string(b) == string(sealed) && (err != nil || c.Text != "hello") {
			t.Fatalf("sealed content did not open: %v", err)
		}
	})
}
