package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigImageDecodeBudget: the process-wide decode budget (docs/api.md#limits)
// defaults to 1 GiB and must leave room for at least one byte.
func TestConfigImageDecodeBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    int64
		wantErr string
	}{
		{name: "default", want: 1 << 30},
		{name: "environment", env: map[string]string{"CONTENTEVAL_IMAGE_DECODE_BUDGET": "419430400"}, want: 400 << 20},
		{name: "flag over environment", env: map[string]string{"CONTENTEVAL_IMAGE_DECODE_BUDGET": "419430400"}, args: []string{"--image-decode-budget=2147483648"}, want: 2 << 30},
		{name: "zero", args: []string{"--image-decode-budget=0"}, wantErr: "--image-decode-budget must be at least 1 byte"},
		{name: "not a number", args: []string{"--image-decode-budget=1GiB"}, wantErr: `--image-decode-budget: "1GiB" is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			resolve := bindConfig(fs, true, func(k string) string { return tc.env[k] })
			require.NoError(t, fs.Parse(tc.args))
			c, err := resolve()
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.ImageDecodeBudget)
		})
	}
}
