package modelbackend

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
)

// Failures are counted per account: one account's failing calls open its
// own breaker only, and the backend fails fast for everyone only once the
// failures span several accounts.
func TestBreakersCountFailuresPerAccount(t *testing.T) {
	t.Parallel()
	slow := modelbackendtest.Failure{Delay: time.Minute} // past every attempt's timeout
	down := modelbackendtest.Failure{Status: 503}
	type failing struct {
		account string
		calls   int
	}
	cases := []struct {
		name    string
		failure modelbackendtest.Failure
		failing []failing
		// then, with the server healthy again, another account asks.
		thenFailsFast bool
	}{
		{name: "one account's timeouts leave the others their verdicts",
			failure: slow, failing: []failing{{"a", breakerFailures}}},
		{name: "one account's 5xx leave the others their verdicts",
			failure: down, failing: []failing{{"a", breakerFailures + 3}}},
		{name: "timeouts of two accounts still leave a third its verdicts",
			failure: slow, failing: []failing{{"a", breakerFailures}, {"b", breakerFailures}}},
		{name: "timeouts of three accounts fail everyone fast",
			failure: slow, failing: []failing{{"a", breakerFailures}, {"b", 1}, {"c", 1}}, thenFailsFast: true},
		{name: "5xx for two accounts fail everyone fast",
			failure: down, failing: []failing{{"a", 3}, {"b", 2}}, thenFailsFast: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := modelbackendtest.New(modelbackendtest.VLLM, decideByWords)
			defer fake.Close()
			b, _ := testBackend(t, fake.BaseURL(), "llama-guard", func(s *Spec) {
				s.Timeout.Duration = 50 * time.Millisecond
				zero := 0
				s.Retries, s.CacheTTL = &zero, &Duration{}
			})
			ask := func(account, text string) (float64, string) {
				batch := batchOf(text, conceptViolence)
				batch.Account = account
				res, err := b.EvaluateSignals(context.Background(), batch)
				if err != nil {
					t.Fatal(err)
				}
				return res.Scores[0], res.Notes[0]
			}
			fake.Fail(tc.failure)
			for _, f := range tc.failing {
				for i := range f.calls {
					if score, note := ask(f.account, fmt.Sprintf("violence %s %d", f.account, i)); score != -1 {
						t.Fatalf("account %s, call %d: %v %q while the server fails", f.account, i, score, note)
					}
				}
			}
			fake.Fail(modelbackendtest.Failure{})
			calls := fake.Calls()
			score, note := ask("another", "violence from another account")
			if tc.thenFailsFast {
				if !strings.Contains(note, "circuit open") || fake.Calls() != calls {
					t.Fatalf("another account: %v %q, %d calls made: want a fast failure", score, note, fake.Calls()-calls)
				}
				return
			}
			if score != 0.9 {
				t.Fatalf("another account: %v %q, want the model's verdict", score, note)
			}
			// The account whose calls failed fails fast itself.
			first := tc.failing[0].account
			if _, note := ask(first, "violence once more"); !strings.Contains(note, "circuit open") {
				t.Errorf("account %s after %d failures: %q, want its breaker open", first, tc.failing[0].calls, note)
			}
		})
	}
}

// The per-account breakers are bounded however many accounts call.
func TestAccountBreakersAreBounded(t *testing.T) {
	t.Parallel()
	br := newBreakers("b")
	for i := range maxAccountBreakers + 10 {
		br.forAccount(fmt.Sprint("account-", i))
	}
	if n := br.accounts.Len(); n != maxAccountBreakers {
		t.Fatalf("%d account breakers, want at most %d", n, maxAccountBreakers)
	}
}
