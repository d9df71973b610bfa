package jobs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

func TestOverShare(t *testing.T) {
	t.Parallel()
	load := func(id string, running, mine int, queued bool) domain.AccountLoad {
		return domain.AccountLoad{AccountID: id, Running: running, Mine: mine, Queued: queued}
	}
	cases := []struct {
		name       string
		loads      []domain.AccountLoad
		accountMax int
		want       bool
	}{
		{"alone in the queue", []domain.AccountLoad{load("a", 8, 8, true)}, 4, false},
		{"another account runs but waits for nothing", []domain.AccountLoad{load("a", 7, 7, true), load("b", 1, 1, false)}, 0, false},
		{"a newcomer waits with no worker", []domain.AccountLoad{load("a", 8, 8, false), load("b", 0, 0, true)}, 0, true},
		{"one worker apart: a move would only swap the lead", []domain.AccountLoad{load("a", 4, 4, true), load("b", 3, 3, true)}, 0, false},
		{"two workers apart", []domain.AccountLoad{load("a", 5, 5, false), load("b", 3, 3, true)}, 0, true},
		{"over the cap while another waits", []domain.AccountLoad{load("a", 3, 3, false), load("b", 2, 0, true)}, 2, true},
		{"at the cap, one worker apart", []domain.AccountLoad{load("a", 2, 2, false), load("b", 1, 1, true)}, 2, false},
		{"the least served waiting account counts", []domain.AccountLoad{load("a", 3, 3, false), load("b", 3, 3, true), load("c", 1, 1, true)}, 0, true},
		{"the account does not run here", []domain.AccountLoad{load("b", 0, 0, true)}, 1, false},
		{"a single worker is not handed back and forth", []domain.AccountLoad{load("a", 1, 1, false), load("b", 0, 0, true)}, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, overShare(tc.loads, "a", tc.accountMax))
		})
	}
}
