package imaging_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/contenteval/contenteval/domain/imaging"
)

// Decode an image under the default limits (20 MiB, 50 MP) and hash it.
func ExamplePDQ() {
	data, err := os.ReadFile("testdata/pdq/misc/wee.jpg")
	if err != nil {
		panic(err)
	}
	img, format, err := imaging.Decode(data, imaging.Limits{})
	if err != nil {
		// err is an *imaging.Error; imaging.FailureType(err) gives the
		// precheck failure type for the 499 body.
		panic(err)
	}
	hash, quality := imaging.PDQ(img)
	fmt.Println(format, hash, quality)
	// Output: jpeg 6227401f601ff4ccafcc9fad4b0d95d371a2eb7265a3285234d228ca94deeb2d 100
}

// Formats we recognise but cannot decode are told apart from corrupt data.
func ExampleFailureType() {
	for _, data := range []string{"<svg xmlns='http://www.w3.org/2000/svg'/>", "not an image"} {
		_, _, err := imaging.Decode([]byte(data), imaging.Limits{})
		t, _ := imaging.FailureType(err)
		fmt.Println(t)
	}
	// Output:
	// PRECHECK_FAILURE_TYPE_UNSUPPORTED_IMAGE_FORMAT
	// PRECHECK_FAILURE_TYPE_INVALID_IMAGE
}

// Parse a PDQ hash list, build the lists snapshot, and check content.
func ExampleMatcher_Check() {
	list := `# exported from a clearing house
6227401f601ff4ccafcc9fad4b0d95d371a2eb7265a3285234d228ca94deeb2d,100
`
	var pdqs []imaging.IndexEntry
	err := imaging.ParseHashList(strings.NewReader(list), imaging.KindPDQ, func(e imaging.HashEntry) error {
		pdqs = append(pdqs, imaging.IndexEntry{Hash: e.PDQ, List: "partner-list"})
		return nil
	})
	if err != nil {
		panic(err)
	}
	lists, err := imaging.NewHashLists(nil, nil, pdqs)
	if err != nil {
		panic(err)
	}
	m := imaging.NewMatcher(lists)

	// A re-encoded copy: a few bits away from the listed hash.
	seen, _ := imaging.ParseHash("6227401f601ff4ccafcc9fad4b0d95d371a2eb7265a3285234d228ca94deeb2f")
	r := m.Check("", "", seen, true, imaging.DefaultBands())
	fmt.Println(r.Matched, r.Confidence, r.List, r.Distance)
	// Output: true PRECHECK_MATCH_CONFIDENCE_HIGH partner-list 1
}

func ExampleContentHash() {
	fmt.Println(imaging.ContentHash([]byte("abc")))
	// Output: sha256::ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
}
