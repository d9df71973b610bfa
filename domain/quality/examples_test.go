package quality_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/quality"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func TestExamples(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, _ := b.label(t, b.mine, "Spam")
		var in []quality.NewExample
		for i := range 20 {
			expected := domain.EvaluationResultFalse
			if i%2 == 0 {
				expected = domain.EvaluationResultTrue
			}
			in = append(in, quality.NewExample{Content: text(fmt.Sprintf("example %d", i)), Expected: expected, Note: fmt.Sprint(i)})
		}
		first, err := b.quality.CreateExamples(ctx, b.mine, l.ID, in[:12])
		require.NoError(t, err)
		second, err := b.quality.CreateExamples(ctx, b.mine, l.ID, in[12:])
		require.NoError(t, err)
		created := append(first, second...)
		for i, e := range created {
			require.Equal(t, fmt.Sprintf("example %d", i), e.Content.Text, "request order")
			require.Equal(t, in[i].Expected, e.Expected)
			require.NotEmpty(t, e.ContentHash)
		}

		// Paged, oldest first, everything once.
		var listed []string
		pages, token := 0, ""
		for {
			page, err := b.quality.ListExamples(ctx, b.mine, l.ID, ptr[int32](7), token)
			require.NoError(t, err)
			for _, e := range page.Examples {
				listed = append(listed, e.Content.Text)
			}
			pages++
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		require.Equal(t, 3, pages)
		want := make([]string, len(in))
		for i := range in {
			want[i] = *in[i].Content.Text
		}
		require.Equal(t, want, listed)

		// Delete one: gone from the list, a second delete is NOT_FOUND.
		require.NoError(t, b.quality.DeleteExample(ctx, b.mine, l.ID, created[3].ID))
		require.Equal(t, domain.NotFound, domain.ErrorCode(b.quality.DeleteExample(ctx, b.mine, l.ID, created[3].ID)))
		page, err := b.quality.ListExamples(ctx, b.mine, l.ID, nil, "")
		require.NoError(t, err)
		require.Len(t, page.Examples, 19)

		// Another account sees neither the label nor its examples.
		_, err = b.quality.ListExamples(ctx, b.other, l.ID, nil, "")
		require.Equal(t, domain.NotFound, domain.ErrorCode(err))
		_, err = b.quality.CreateExamples(ctx, b.other, l.ID, in[:1])
		require.Equal(t, domain.NotFound, domain.ErrorCode(err))
		require.Equal(t, domain.NotFound, domain.ErrorCode(b.quality.DeleteExample(ctx, b.other, l.ID, created[0].ID)))
		_, err = b.quality.ListExamples(ctx, b.mine, l.ID, nil, "a token of no request")
		requireField(t, err, "page_token", "a bad token")
	})
}

// A call with a bad example stores none of it, naming the example.
func TestExamplesRefused(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, _ := b.label(t, b.mine, "Spam")
		good := quality.NewExample{Content: text("fine"), Expected: domain.EvaluationResultFalse}
		img := []byte("\x89PNG")
		for _, tc := range []struct {
			name  string
			bad   quality.NewExample
			field string
			code  domain.Code
		}{
			{"unspecified outcome", quality.NewExample{Content: text("a")}, "examples[1].expectedOutcome", domain.InvalidArgument},
			{"no content", quality.NewExample{Expected: domain.EvaluationResultTrue}, "examples[1].contentData", domain.InvalidArgument},
			{"note too long", quality.NewExample{Content: text("a"), Expected: domain.EvaluationResultTrue, Note: strings.Repeat("n", domain.MaxExampleNote+1)},
				"examples[1].note", domain.InvalidArgument},
			{"an image without an image inspector", quality.NewExample{Content: domain.ContentInput{Image: &img}, Expected: domain.EvaluationResultTrue},
				"", domain.Unimplemented},
		} {
			_, err := b.quality.CreateExamples(ctx, b.mine, l.ID, []quality.NewExample{good, tc.bad})
			require.Equal(t, tc.code, domain.ErrorCode(err), "%s: %v", tc.name, err)
			if tc.field != "" {
				requireFieldPrefix(t, err, tc.field, tc.name)
			}
		}
		_, err := b.quality.CreateExamples(ctx, b.mine, l.ID, nil)
		requireField(t, err, "examples", "no examples")
		page, err := b.quality.ListExamples(ctx, b.mine, l.ID, nil, "")
		require.NoError(t, err)
		require.Empty(t, page.Examples, "nothing of a refused call is stored")
	})
}

// requireField asserts err is INVALID_ARGUMENT naming field.
func requireField(t *testing.T, err error, field, msg string) {
	t.Helper()
	requireViolation(t, err, msg, func(f string) bool { return f == field })
}

// requireFieldPrefix asserts err is INVALID_ARGUMENT naming field or a
// field under it.
func requireFieldPrefix(t *testing.T, err error, field, msg string) {
	t.Helper()
	requireViolation(t, err, msg, func(f string) bool { return strings.HasPrefix(f, field) })
}

func requireViolation(t *testing.T, err error, msg string, match func(string) bool) {
	t.Helper()
	require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err), "%s: %v", msg, err)
	var de *domain.Error
	require.True(t, errors.As(err, &de), msg)
	for _, d := range de.Details {
		if br, ok := d.(domain.BadRequest); ok {
			for _, v := range br.FieldViolations {
				if match(v.Field) {
					return
				}
			}
		}
	}
	t.Fatalf("%s: %v does not name the expected field", msg, err)
}
