package precheck

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
)

// budgetFixture is an image and a service whose decode budget holds exactly it.
func budgetFixture(t *testing.T, slack int64) ([]byte, *Service, *imaging.Budget) {
	t.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for i := range m.Pix {
		m.Pix[i] = uint8(i * 7)
	}
	m.Set(0, 0, color.White)
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	one, err := imaging.Reservation(buf.Bytes(), imaging.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b := imaging.NewBudget(one + slack)
	svc, err := NewService(nil, Config{DecodeBudget: b}, domain.SystemClock{}, func() string { return "id" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), svc, b
}

func TestCheckHoldsDecodeBudgetUntilRelease(t *testing.T) {
	t.Parallel()
	data, svc, b := budgetFixture(t, 0)
	ctx := context.Background()
	img, err := svc.Check(ctx, "acct", "job", data)
	if err != nil {
		t.Fatal(err)
	}
	if b.Held() != b.Size() {
		t.Fatalf("%d bytes held while the image is in use, want %d", b.Held(), b.Size())
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := svc.Check(done, "acct", "job", data); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check with the budget full = %v, want the context's error", err)
	}
	img.Release()
	img.Release()
	if b.Held() != 0 {
		t.Fatalf("%d bytes held after Release", b.Held())
	}
	img, err = svc.Check(ctx, "acct", "job", data)
	if err != nil {
		t.Fatalf("Check after Release: %v", err)
	}
	img.Release()
}

func TestCheckRefusesImageLargerThanBudget(t *testing.T) {
	t.Parallel()
	data, svc, _ := budgetFixture(t, -1)
	_, err := svc.Check(context.Background(), "acct", "job", data)
	var blocked *Blocked
	if !errors.As(err, &blocked) || blocked.Failure.Type != domain.PrecheckFailureInvalidImage ||
		!strings.Contains(blocked.Failure.Message, "the image is too large") ||
		!strings.Contains(blocked.Failure.Message, "decode budget") {
		t.Fatalf("Check = %v, want a precheck failure saying the image is larger than the decode budget", err)
	}
}

func TestInspectImageReleasesDecodeBudget(t *testing.T) {
	t.Parallel()
	data, svc, b := budgetFixture(t, 0)
	in := &Inspector{Service: svc}
	for i := range 3 {
		if _, err := in.InspectImage(context.Background(), "acct", "job", domain.ContentItem{Kind: domain.ContentImage, Bytes: data}, nil); err != nil {
			t.Fatalf("inspection %d: %v", i, err)
		}
		if b.Held() != 0 {
			t.Fatalf("%d bytes still held after inspection %d", b.Held(), i)
		}
	}
}
