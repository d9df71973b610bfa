package retention_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/retention"
)

func TestEffective(t *testing.T) {
	t.Parallel()
	const d = 24 * time.Hour
	for _, tc := range []struct {
		name            string
		server, account time.Duration
		want            time.Duration
	}{
		{"server default", 30 * d, 0, 30 * d},
		{"shorter account", 30 * d, 7 * d, 7 * d},
		{"longer account is capped", 30 * d, 90 * d, 30 * d},
		{"server keeps everything, account does not", 0, 7 * d, 7 * d},
		{"both keep everything", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, retention.Effective(tc.server, tc.account))
		})
	}
}
