package testwait

import (
	"errors"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	notYet := errors.New("not yet")
	tests := []struct {
		name     string
		trueFrom int // the poll from which cond holds; 0: never
		wantErr  bool
	}{
		{name: "holds at once", trueFrom: 1},
		{name: "holds after some polls", trueFrom: 4},
		{name: "never holds", trueFrom: 0, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			polls := 0
			err := Until(200*time.Millisecond, func() (bool, error) {
				polls++
				return tc.trueFrom > 0 && polls >= tc.trueFrom, notYet
			})
			if tc.wantErr {
				var te *TimeoutError
				if !errors.As(err, &te) || !errors.Is(err, notYet) {
					t.Fatalf("err = %v, want a timeout carrying the last error", err)
				}
				return
			}
			if err != nil || polls != tc.trueFrom {
				t.Fatalf("err = %v after %d polls, want nil after %d", err, polls, tc.trueFrom)
			}
		})
	}
}
