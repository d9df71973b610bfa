package jobs

// Content validation: what every kind of evaluation (jobs, label
// evaluation, dataset examples, batch items) accepts as a content entry.

import (
	"net/url"
	"strconv"

	"github.com/contenteval/contenteval/domain"
)

// ValidateContent turns the request's entries into content items. Codes:
// INVALID_ARGUMENT naming contentData[i].
func ValidateContent(in []domain.ContentInput, maxItems, maxText int) ([]domain.ContentItem, []domain.ContentSummary, error) {
	if len(in) == 0 {
		return nil, nil, domain.InvalidField("contentData", "must have at least one entry")
	}
	if len(in) > maxItems {
		return nil, nil, domain.InvalidField("contentData", "has "+strconv.Itoa(len(in))+" entries; the limit is "+strconv.Itoa(maxItems))
	}
	items := make([]domain.ContentItem, len(in))
	sums := make([]domain.ContentSummary, len(in))
	for i, c := range in {
		field := "contentData[" + strconv.Itoa(i) + "]"
		var set []domain.ContentKind
		it := domain.ContentItem{Metadata: c.Metadata}
		if c.Text != nil {
			set = append(set, domain.ContentText)
			it.Kind, it.Text = domain.ContentText, *c.Text
		}
		for _, b := range []struct {
			k domain.ContentKind
			v *[]byte
		}{{domain.ContentImage, c.Image}, {domain.ContentVideo, c.Video}, {domain.ContentAudio, c.Audio}} {
			if b.v != nil {
				set = append(set, b.k)
				it.Kind, it.Bytes = b.k, *b.v
			}
		}
		for _, u := range []struct {
			k domain.ContentKind
			v *string
		}{{domain.ContentImageURL, c.ImageURL}, {domain.ContentVideoURL, c.VideoURL}, {domain.ContentAudioURL, c.AudioURL}} {
			if u.v != nil {
				set = append(set, u.k)
				it.Kind, it.URL = u.k, *u.v
			}
		}
		if len(set) != 1 {
			return nil, nil, domain.InvalidField(field, "must carry exactly one of text, image, imageUrl, videoUrl, audioUrl, video, audio; got "+strconv.Itoa(len(set)))
		}
		if c.Captions != nil {
			it.Captions = *c.Captions
		}
		switch it.Kind {
		case domain.ContentText:
			if len(it.Text) > maxText {
				return nil, nil, domain.InvalidField(field+".text", "is "+strconv.Itoa(len(it.Text))+" bytes; the limit is "+strconv.Itoa(maxText))
			}
			sums[i].ContentHash = domain.ContentHash([]byte(it.Text))
		case domain.ContentImage, domain.ContentVideo, domain.ContentAudio:
			if len(it.Bytes) == 0 {
				return nil, nil, domain.InvalidField(field+"."+string(it.Kind), "must not be empty")
			}
			sums[i].ContentHash = domain.ContentHash(it.Bytes)
		default:
			if u, err := url.Parse(it.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, nil, domain.InvalidField(field+"."+string(it.Kind), "must be an http or https URL")
			}
		}
		sums[i].Metadata = c.Metadata
		items[i] = it
	}
	return items, sums, nil
}
