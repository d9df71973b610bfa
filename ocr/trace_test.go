package ocr

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/contenteval/contenteval/domain/traces"
)

// TestRecognizeSpan: a recognition is a span of the caller's trace, named
// after the tool, with the image's size and no text. Not parallel: it
// installs the global tracer provider for its duration.
func TestRecognizeSpan(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh for the stand-in tesseract")
	}
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(provider)
	traces.SetEnabled(true)
	t.Cleanup(func() {
		traces.SetEnabled(false)
		otel.SetTracerProvider(previous)
		require.NoError(t, provider.Shutdown(context.Background()))
	})

	dir := t.TempDir()
	path := filepath.Join(dir, "tesseract")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\ncat >/dev/null\necho 'secret words 7d1e'\n"), 0o700))
	for _, tc := range []struct {
		name string
		path string
		fail bool
	}{
		{"recognized", path, false},
		{"failed", filepath.Join(dir, "missing-tesseract"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorder.Reset()
			ctx, parent := provider.Tracer("test").Start(t.Context(), "job")
			ocr := &Tesseract{Path: tc.path}
			text, err := ocr.Recognize(ctx, image.NewGray(image.Rect(0, 0, 64, 48)), false)
			parent.End()
			if tc.fail {
				// Not installed: said before any span, like the service says at start.
				require.ErrorIs(t, err, ErrUnavailable)
				require.Len(t, recorder.Ended(), 1, "only the parent span")
				return
			}
			require.NoError(t, err)
			require.Equal(t, "secret words 7d1e", text)
			var span sdktrace.ReadOnlySpan
			for _, s := range recorder.Ended() {
				if s.Name() == "ocr.recognize" {
					span = s
				}
			}
			require.NotNil(t, span, "an ocr.recognize span")
			require.Equal(t, parent.SpanContext().TraceID(), span.SpanContext().TraceID())
			require.Equal(t, parent.SpanContext().SpanID(), span.Parent().SpanID())
			attrs := map[string]string{}
			for _, a := range span.Attributes() {
				attrs[string(a.Key)] = a.Value.String()
			}
			require.Equal(t, map[string]string{
				"contenteval.media.tool": "tesseract", "contenteval.ocr.language": "eng", "contenteval.ocr.low_detail": "false",
				"contenteval.image.width": "64", "contenteval.image.height": "48",
			}, attrs, "ids and sizes, never the text")
		})
	}
}
