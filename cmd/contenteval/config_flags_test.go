package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigBoolFlags: a bool setting given without a value is true, like
// the standard library's bool flags (they were string flags, which need a value), and still takes an explicit
// value over its environment variable.
func TestConfigBoolFlags(t *testing.T) {
	t.Parallel()
	type want struct{ allowPrivate, noMigrate, ocr, s3PathStyle bool }
	for _, tc := range []struct {
		name    string
		serve   bool
		env     map[string]string
		args    []string
		want    want
		wantErr string
	}{
		{name: "defaults", serve: true, want: want{s3PathStyle: true}},
		{name: "bare flag is true", serve: true, args: []string{"--allow-private-urls"}, want: want{allowPrivate: true, s3PathStyle: true}},
		{name: "single dash", serve: true, args: []string{"-allow-private-urls"}, want: want{allowPrivate: true, s3PathStyle: true}},
		{name: "explicit true", serve: true, args: []string{"--allow-private-urls=true"}, want: want{allowPrivate: true, s3PathStyle: true}},
		{name: "explicit false", serve: true, args: []string{"--allow-private-urls=false"}, want: want{s3PathStyle: true}},
		{name: "flag over environment", serve: true, env: map[string]string{"CONTENTEVAL_ALLOW_PRIVATE_URLS": "true"}, args: []string{"--allow-private-urls=false"}, want: want{s3PathStyle: true}},
		{name: "environment alone", serve: true, env: map[string]string{"CONTENTEVAL_ALLOW_PRIVATE_URLS": "1"}, want: want{allowPrivate: true, s3PathStyle: true}},
		{name: "every bool setting", serve: true, args: []string{"--allow-private-urls", "--no-migrate", "--ocr"}, want: want{allowPrivate: true, noMigrate: true, ocr: true, s3PathStyle: true}},
		{name: "bare flag then another flag", serve: true, args: []string{"--no-migrate", "--allow-private-urls=false", "--ocr"}, want: want{noMigrate: true, ocr: true, s3PathStyle: true}},
		{name: "a default true setting turned off", args: []string{"--s3-path-style=false"}},
		{name: "not a bool", serve: true, args: []string{"--allow-private-urls=maybe"}, wantErr: `--allow-private-urls: "maybe" is not true or false`},
		{name: "not a bool in the environment", serve: true, env: map[string]string{"CONTENTEVAL_OCR": "sometimes"}, wantErr: `--ocr: "sometimes" is not true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			resolve := bindConfig(fs, tc.serve, func(k string) string { return tc.env[k] })
			require.NoError(t, fs.Parse(tc.args))
			require.Empty(t, fs.Args(), "no argument is left over")
			c, err := resolve()
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, want{c.AllowPrivateURLs, c.NoMigrate, c.OCRByDefault, c.S3.PathStyle})
		})
	}
}
