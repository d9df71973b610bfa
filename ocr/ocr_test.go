package ocr_test

import (
	"context"
	"errors"
	"github.com/contenteval/contenteval/internal/testenv"
	"image"
	"image/color"
	"image/draw"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/ocr"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// textImage renders text in a large, clean bitmap font.
func textImage(text string, scale int) image.Image {
	face := basicfont.Face7x13
	w := font.MeasureString(face, text).Ceil() + 20
	small := image.NewGray(image.Rect(0, 0, w, 30))
	draw.Draw(small, small.Bounds(), image.White, image.Point{}, draw.Src)
	d := &font.Drawer{Dst: small, Src: image.NewUniform(color.Black), Face: face, Dot: fixed.P(10, 20)}
	d.DrawString(text)
	big := image.NewGray(image.Rect(0, 0, w*scale, 30*scale))
	for y := 0; y < 30*scale; y++ {
		for x := 0; x < w*scale; x++ {
			big.SetGray(x, y, small.GrayAt(x/scale, y/scale))
		}
	}
	return big
}

func requireTesseract(t *testing.T) *ocr.Tesseract {
	t.Helper()
	ts := &ocr.Tesseract{}
	if err := ts.Available(); err != nil {
		testenv.SkipUnlessCI(t, "tesseract-ocr is missing (make ocr-tools): %v", err)
	}
	return ts
}

func TestRecognize(t *testing.T) {
	ts := requireTesseract(t)
	for _, low := range []bool{false, true} {
		text, err := ts.Recognize(context.Background(), textImage("I WILL HURT YOU", 6), low)
		require.NoError(t, err)
		require.Contains(t, strings.ToUpper(text), "HURT YOU", "low detail %v", low)
	}
}

func TestUnavailableSaysSo(t *testing.T) {
	ts := &ocr.Tesseract{Path: "/nonexistent/tesseract"}
	_, err := ts.Recognize(context.Background(), textImage("x", 2), false)
	require.True(t, errors.Is(err, ocr.ErrUnavailable))
	require.Contains(t, err.Error(), "tesseract-ocr")
}
