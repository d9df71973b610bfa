package precheck

import (
	"context"
	"errors"
	"image"
	"net/http"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// Fetch returns the body of a customer URL under the URL rules (safehttp).
type Fetch func(ctx context.Context, url string) ([]byte, error)

// TextRecognizer reads text in images (the ocr package's tesseract).
type TextRecognizer interface {
	Available() error
	Recognize(ctx context.Context, img image.Image, lowDetail bool) (string, error)
}

// Inspector implements domain.ImageInspector: fetch, precheck, hashes for
// HASH signals, and OCR text for text signals when asked.
type Inspector struct {
	Service *Service
	Fetch   Fetch
	OCR     TextRecognizer
	// OCRByDefault runs OCR unless options["ocr"] is "false".
	OCRByDefault bool
}

var _ domain.ImageInspector = (*Inspector)(nil)

// InspectImage implements domain.ImageInspector. options["ocr"] ("true" or
// "false") overrides the server default; options["imageDetailLevel"] =
// IMAGE_DETAIL_LEVEL_LOW downsizes before OCR.
func (in *Inspector) InspectImage(ctx context.Context, accountID, jobID string, item domain.ContentItem, options map[string]string) (*domain.InspectedImage, error) {
	data := item.Bytes
	if item.Kind == domain.ContentImageURL {
		if in.Fetch == nil {
			return nil, domain.InvalidField("imageUrl", "fetching image URLs is not configured")
		}
		body, err := in.Fetch(ctx, item.URL)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, domain.InvalidField("imageUrl", "the image could not be fetched: "+err.Error())
		}
		data = body
	}
	img, err := in.Service.Check(ctx, accountID, jobID, data)
	var blocked *Blocked
	if errors.As(err, &blocked) {
		return nil, &domain.Error{Code: domain.Canceled, Message: blocked.Failure.Message,
			Details: []domain.Detail{blocked.Failure}}
	}
	if err != nil {
		return nil, err
	}
	defer img.Release() // OCR is the pixels' last use
	out := &domain.InspectedImage{
		ContentHash: img.ContentHash, Encoded: data, MediaType: http.DetectContentType(data), PrecheckMatches: img.PrecheckMatches,
		Features: rules.ImageFeatures{PDQ: img.PDQ, PDQQuality: img.PDQQuality, HasPDQ: img.PDQQuality >= in.Service.cfg.MinPDQQuality,
			MD5: img.Digests.MD5, SHA1: img.Digests.SHA1},
	}
	if in.wantOCR(options) {
		if in.OCR == nil || in.OCR.Available() != nil {
			return nil, domain.Errorf(domain.FailedPrecondition, "OCR was requested but is not available on this server (tesseract is not installed)")
		}
		low := strings.EqualFold(options["imageDetailLevel"], "IMAGE_DETAIL_LEVEL_LOW")
		text, err := in.OCR.Recognize(ctx, img.Decoded, low)
		if err != nil {
			return nil, err
		}
		out.Text, out.OCR = text, true
	}
	return out, nil
}

func (in *Inspector) wantOCR(options map[string]string) bool {
	switch strings.ToLower(options["ocr"]) {
	case "true", "1", "yes":
		return true
	case "false", "0", "no":
		return false
	}
	return in.OCRByDefault
}
