package main

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMediaConfig(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := mediaConfig(env(nil))
	require.NoError(t, err)
	require.Equal(t, int64(2<<30), c.MaxBytes)
	require.Equal(t, 4*time.Hour, c.MaxDuration)
	require.Equal(t, 500, c.SceneCeiling)
	require.Equal(t, 0.35, c.SceneThreshold)
	require.Equal(t, 5*time.Minute, c.RemuxTimeout)

	c, err = mediaConfig(env(map[string]string{
		"CONTENTEVAL_MEDIA_MAX_BYTES": "1000", "CONTENTEVAL_MEDIA_MAX_DURATION": "90s",
		"CONTENTEVAL_MEDIA_SCENE_CEILING": "7", "CONTENTEVAL_MEDIA_SCENE_THRESHOLD": "0.5",
		"CONTENTEVAL_MEDIA_REMUX_TIMEOUT": "2s", "CONTENTEVAL_MEDIA_TEMP_DIR": "/var/tmp",
	}))
	require.NoError(t, err)
	require.Equal(t, int64(1000), c.MaxBytes)
	require.Equal(t, 90*time.Second, c.MaxDuration)
	require.Equal(t, 7, c.SceneCeiling)
	require.Equal(t, 0.5, c.SceneThreshold)
	require.Equal(t, 2*time.Second, c.RemuxTimeout)
	require.Equal(t, "/var/tmp", c.TempDir)

	for k, v := range map[string]string{
		"CONTENTEVAL_MEDIA_MAX_BYTES": "-1", "CONTENTEVAL_MEDIA_MAX_DURATION": "soon",
		"CONTENTEVAL_MEDIA_SCENE_CEILING": "0", "CONTENTEVAL_MEDIA_SCENE_THRESHOLD": "1",
		"CONTENTEVAL_MEDIA_REMUX_TIMEOUT": "0s",
	} {
		_, err := mediaConfig(env(map[string]string{k: v}))
		require.Error(t, err, k)
		require.Contains(t, err.Error(), k)
	}
}

func TestNewMediaAnalyzerStatesTools(t *testing.T) {
	t.Parallel()
	c, err := mediaConfig(func(string) string { return "" })
	require.NoError(t, err)
	var logs bytes.Buffer
	a := newMediaAnalyzer(c, false, time.Now(), slog.New(slog.NewTextHandler(&logs, nil)))
	require.Contains(t, logs.String(), "timed media: "+a.Tools().Status())
	require.Nil(t, framePrecheckFor(nil))
}
