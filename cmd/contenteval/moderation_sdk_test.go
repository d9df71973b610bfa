package main

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/internal/testenv"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// openAINode is test/sdk-openai compiled once per test binary run.
var openAINode struct {
	once sync.Once
	out  []byte
	err  error
}

// requireOpenAINodeSDK compiles test/sdk-openai with tsc --strict (the
// SDK's types are read without casts) and returns node and the repository
// root. Under CI a missing tool fails (the Makefile's node_modules target
// installs them); elsewhere it skips.
func requireOpenAINodeSDK(t *testing.T) (node, root string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	node, err = exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npx")
	}
	for _, p := range []string{"openai", "typescript", "@types/node"} {
		if err == nil {
			_, err = os.Stat(filepath.Join(root, "node_modules", p, "package.json"))
		}
	}
	if err != nil {
		testenv.SkipUnlessCI(t, "node or an npm package is missing (make node_modules): %v", err)
	}
	openAINode.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npx", "--no-install", "tsc", "-p", filepath.Join("test", "sdk-openai"))
		cmd.Dir = root
		openAINode.out, openAINode.err = cmd.CombinedOutput()
	})
	require.NoError(t, openAINode.err, "compiling test/sdk-openai:\n%s", openAINode.out)
	return node, root
}

// TestModerationOpenAINodeSDK runs test/sdk-openai, the official OpenAI
// Node SDK in its own node process, against a real server on each backend:
// a text, texts, text and image parts, OpenAI's model name with and without
// a default policy, a 404 model, a 401 and a 429 the SDK retries.
func TestModerationOpenAINodeSDK(t *testing.T) {
	node, root := requireOpenAINodeSDK(t)
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true }, func(t *testing.T, env *testEnv) {
		f := newModerationFixture(t, env)
		withDefault := env.newAccount("default", domain.AccountPolicyFirst)
		f.createPolicy(t, withDefault.Token)
		f.setDefaults(t, withDefault.ID, accountSettings{moderationPolicy: "mod"}, "moderation-policy")

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "--test", filepath.Join("test", "sdk-openai", "dist", "moderation.test.mjs"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(),
			"CONTENTEVAL_URL="+env.URL,
			"CONTENTEVAL_KEY="+env.PolicyFirst.Token,
			"CONTENTEVAL_DEFAULT_KEY="+withDefault.Token,
			"CONTENTEVAL_LIMITED_KEY="+f.limited.Token,
			"CONTENTEVAL_IMAGE_URL="+f.imageURL,
			"CONTENTEVAL_IMAGE_DATA_URL=data:image/png;base64,"+base64.StdEncoding.EncodeToString(f.img),
		)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "node --test test/sdk-openai/dist/moderation.test.mjs:\n%s", out)
		require.Contains(t, string(out), "# fail 0")
		require.NotContains(t, string(out), "# pass 0")
		t.Logf("%s", out)
	})
}

// TestModerationOpenAIGoSDK runs github.com/openai/openai-go against the
// real server: the SDK's typed fields, its errors, and its retry of a 429.
// The phases run in order on one fixture (the model phase gives the
// account a default policy).
func TestModerationOpenAIGoSDK(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true }, func(t *testing.T, env *testEnv) {
		f := newModerationFixture(t, env)
		c := openAIClient(env, env.PolicyFirst.Token)
		t.Run("texts", func(t *testing.T) { goSDKTexts(t, env, c) })
		t.Run("text and image", func(t *testing.T) { goSDKTextAndImage(t, f, c) })
		t.Run("models and keys", func(t *testing.T) { goSDKModelsAndKeys(t, env, f, c) })
		t.Run("retry of a 429", func(t *testing.T) { goSDKRetry(t, env, f) })
	})
}

// goSDKTexts: a text, whose call records a job, and an array of texts.
func goSDKTexts(t *testing.T, env *testEnv, c openai.Client) {
	ctx := context.Background()
	// A text.
	res, err := c.Moderations.New(ctx, openai.ModerationNewParams{
		Model: "mod", Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("I will kill you")},
	})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.ID, "modr-"), res.ID)
	require.Equal(t, "mod", res.Model)
	require.Len(t, res.Results, 1)
	r := res.Results[0]
	require.True(t, r.Flagged)
	require.True(t, r.Categories.Violence)
	require.False(t, r.Categories.Harassment)
	require.False(t, r.Categories.Sexual)
	require.GreaterOrEqual(t, r.CategoryScores.Violence, 0.5)
	require.Equal(t, []string{"text"}, r.CategoryAppliedInputTypes.Violence)
	require.Empty(t, r.CategoryAppliedInputTypes.Sexual)
	// The call recorded a job, readable as any other.
	job := env.call(http.MethodGet, "/v1/jobs/"+strings.TrimPrefix(res.ID, "modr-"), env.PolicyFirst.Token, "")
	require.Equal(t, http.StatusOK, job.Status, "%s", job.Body)
	require.Contains(t, string(job.Body), "JOB_STATUS_COMPLETED")

	// An array of texts: one result each, in order.
	res, err = c.Moderations.New(ctx, openai.ModerationNewParams{
		Model: "mod", Input: openai.ModerationNewParamsInputUnion{OfStringArray: []string{"good morning", "you idiot"}},
	})
	require.NoError(t, err)
	require.Len(t, res.Results, 2)
	require.False(t, res.Results[0].Flagged)
	require.True(t, res.Results[1].Flagged)
	require.True(t, res.Results[1].Categories.Harassment)
	require.False(t, res.Results[1].Categories.Violence)
}

// goSDKTextAndImage: text and image parts are one input; the image comes
// by data: URL and by http URL, through the image content's fetch and
// precheck.
func goSDKTextAndImage(t *testing.T, f *moderationFixture, c openai.Client) {
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(f.img)
	for _, u := range []string{dataURL, f.imageURL} {
		res, err := c.Moderations.New(context.Background(), openai.ModerationNewParams{
			Model: "mod", Input: openai.ModerationNewParamsInputUnion{OfModerationMultiModalArray: []openai.ModerationMultiModalInputUnionParam{
				{OfText: &openai.ModerationTextInputParam{Text: "I will kill you"}},
				{OfImageURL: &openai.ModerationImageURLInputParam{ImageURL: openai.ModerationImageURLInputImageURLParam{URL: u}}},
			}},
		})
		require.NoError(t, err, u[:20])
		require.Len(t, res.Results, 1)
		r := res.Results[0]
		require.True(t, r.Flagged, "%s", r.RawJSON())
		require.True(t, r.Categories.Violence, "%s", r.RawJSON())
		// The text rule could not be evaluated on the image: violence
		// saw the text only, Known (a hash) the image only.
		require.Equal(t, []string{"text"}, r.CategoryAppliedInputTypes.Violence)
		require.Empty(t, r.CategoryAppliedInputTypes.Sexual)
		known, ok := r.Categories.JSON.ExtraFields["Known"]
		require.True(t, ok, "our own category is in the body: %s", r.RawJSON())
		require.Equal(t, "true", known.Raw())
		require.JSONEq(t, `["image"]`, r.CategoryAppliedInputTypes.JSON.ExtraFields["Known"].Raw())
	}
}

// goSDKModelsAndKeys: OpenAI's model name without a default policy is a
// 404 the SDK raises as its error type; with one, it evaluates that
// policy. A model that names nothing is a 404, a bad key a 401.
func goSDKModelsAndKeys(t *testing.T, env *testEnv, f *moderationFixture, c openai.Client) {
	ctx := context.Background()
	_, err := c.Moderations.New(ctx, openai.ModerationNewParams{
		Model: openai.ModerationModelOmniModerationLatest, Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("I will kill you")},
	})
	requireOpenAIError(t, err, http.StatusNotFound, "model_not_found")
	f.setDefaults(t, env.PolicyFirst.ID, accountSettings{moderationPolicy: "mod"}, "moderation-policy")
	res, err := c.Moderations.New(ctx, openai.ModerationNewParams{
		Model: openai.ModerationModelOmniModerationLatest, Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("I will kill you")},
	})
	require.NoError(t, err)
	require.Equal(t, openai.ModerationModelOmniModerationLatest, res.Model)
	require.True(t, res.Results[0].Categories.Violence)

	// A model that names nothing, and a bad key.
	_, err = c.Moderations.New(ctx, openai.ModerationNewParams{
		Model: "no-such-policy", Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("hi")},
	})
	requireOpenAIError(t, err, http.StatusNotFound, "model_not_found")
	bad := openAIClient(env, "not-a-key")
	_, err = bad.Moderations.New(ctx, openai.ModerationNewParams{
		Model: "mod", Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("hi")},
	})
	requireOpenAIError(t, err, http.StatusUnauthorized, "invalid_api_key")
}

// goSDKRetry: on a 429 the SDK waits Retry-After and retries on its own.
func goSDKRetry(t *testing.T, env *testEnv, f *moderationFixture) {
	var mu sync.Mutex
	var statuses []int
	var retryAfter []string
	lc := openAIClient(env, f.limited.Token, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err == nil {
			mu.Lock()
			statuses = append(statuses, resp.StatusCode)
			retryAfter = append(retryAfter, resp.Header.Get("Retry-After"))
			mu.Unlock()
		}
		return resp, err
	}))
	for range 2 {
		res, err := lc.Moderations.New(context.Background(), openai.ModerationNewParams{
			Model: "mod", Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("you idiot")},
		})
		require.NoError(t, err)
		require.True(t, res.Results[0].Categories.Harassment)
	}
	mu.Lock()
	defer mu.Unlock()
	// The first call, then the second's 429s (one, or two when the
	// loaded machine's clock lags) and its retry's success.
	require.GreaterOrEqual(t, len(statuses), 3, "%v", statuses)
	require.Equal(t, 200, statuses[0])
	require.Equal(t, 200, statuses[len(statuses)-1])
	for i := 1; i < len(statuses)-1; i++ {
		require.Equal(t, 429, statuses[i], "%v", statuses)
		require.Equal(t, "1", retryAfter[i])
	}
}
