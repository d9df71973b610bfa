package modelbackend

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// File is the backends file (docs/operations.md#model-backends): the model servers an operator
// runs and which one a version or job that names no stack uses.
type File struct {
	Default  string `yaml:"default"`
	Backends []Spec `yaml:"backends"`
}

// Spec is one backend of the file.
type Spec struct {
	Name    string `yaml:"name"`
	URL     string `yaml:"url"` // the OpenAI-style base, e.g. http://127.0.0.1:8000/v1
	Model   string `yaml:"model"`
	Profile string `yaml:"profile"`
	// APIKeyEnv names the environment variable holding the bearer key, so
	// the key itself never sits in the file.
	APIKeyEnv      string    `yaml:"apiKeyEnv"`
	Timeout        Duration  `yaml:"timeout"`        // one attempt (30 s)
	MaxConcurrency int       `yaml:"maxConcurrency"` // calls in flight (16)
	BundleSize     int       `yaml:"bundleSize"`     // signals per call where the profile takes several (8)
	Vision         bool      `yaml:"vision"`
	OnFailure      string    `yaml:"onFailure"` // fail (default) | builtin
	CacheTTL       *Duration `yaml:"cacheTTL"`  // 10 m; 0s turns the cache off
	CacheEntries   int       `yaml:"cacheEntries"`
	Retries        *int      `yaml:"retries"` // after the first attempt (2)
	// ExpeditedBackend names the backend expedited evaluations use instead.
	ExpeditedBackend string `yaml:"expeditedBackend"`
	// ReasoningEffort is sent to reasoning models (gpt-oss-safeguard):
	// low, medium or high.
	ReasoningEffort string `yaml:"reasoningEffort"`
	// MaxTokens bounds the answer; reasoning models need room (profile default).
	MaxTokens int `yaml:"maxTokens"`
	// MaxPromptBytes bounds what one call sends of the content, its global
	// context and the criteria (32 KiB, about 8k tokens); more is refused
	// rather than sent or cut.
	MaxPromptBytes int `yaml:"maxPromptBytes"`

	line int
}

// Duration reads "30s"-style durations.
type Duration struct{ time.Duration }

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration like 30s or 2m", n.Line, n.Value)
	}
	d.Duration = v
	return nil
}

// Failure behaviours.
const (
	OnFailureFail    = "fail"
	OnFailureBuiltin = "builtin"
)

// Limits of the file: a backend is a goroutine pool, a cache and a breaker.
const (
	maxBackends       = 64
	maxConcurrencyCap = 1024
	maxBundleSize     = 64
	maxCacheEntries   = 1_000_000
	maxRetries        = 5
	minPromptBytes    = 1 << 10
	maxPromptBytesCap = 1 << 20
	maxFileBytes      = 1 << 20
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// LoadFile reads and validates a backends file; every error names its line.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("backends file: %w", err)
	}
	f, err := ParseFile(data)
	if err != nil {
		return nil, fmt.Errorf("backends file %s: %w", path, err)
	}
	return f, nil
}

// ParseFile parses and validates a backends file. Defaults are applied.
func ParseFile(data []byte) (*File, error) {
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("is %d bytes; at most %d", len(data), maxFileBytes)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	// Line numbers of each backend entry, for the checks below.
	if len(root.Content) == 1 && root.Content[0].Kind == yaml.MappingNode {
		m := root.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "backends" && m.Content[i+1].Kind == yaml.SequenceNode {
				for k, item := range m.Content[i+1].Content {
					if k < len(f.Backends) {
						f.Backends[k].line = item.Line
					}
				}
			}
		}
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

func (f *File) validate() error {
	var errs []error
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...)))
	}
	if len(f.Backends) == 0 {
		return errors.New("names no backends")
	}
	if len(f.Backends) > maxBackends {
		return fmt.Errorf("names %d backends; at most %d", len(f.Backends), maxBackends)
	}
	names := map[string]bool{}
	for i := range f.Backends {
		s := &f.Backends[i]
		s.applyDefaults()
		switch {
		case !namePattern.MatchString(s.Name):
			bad(s.line, "backend name %q must be 1 to 64 letters, digits, '.', '_' or '-'", s.Name)
		case s.Name == BuiltinStack:
			bad(s.line, "backend name %q is reserved for the built-in evaluators", s.Name)
		case names[s.Name]:
			bad(s.line, "backend name %q is used twice", s.Name)
		}
		names[s.Name] = true
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(s.line, "backend %q: url %q must be an http(s) URL such as http://127.0.0.1:8000/v1", s.Name, s.URL)
		}
		if s.Model == "" {
			bad(s.line, "backend %q: model is required", s.Name)
		}
		p, ok := profiles[s.Profile]
		if !ok {
			bad(s.line, "backend %q: profile %q is not one of %s", s.Name, s.Profile, strings.Join(ProfileNames(), ", "))
		} else if s.Vision && !p.vision {
			bad(s.line, "backend %q: profile %s reads text only; vision needs profile generic", s.Name, s.Profile)
		}
		if s.APIKeyEnv != "" {
			if _, ok := os.LookupEnv(s.APIKeyEnv); !ok {
				bad(s.line, "backend %q: apiKeyEnv names %s, which is not set", s.Name, s.APIKeyEnv)
			}
		}
		if s.MaxConcurrency < 1 || s.MaxConcurrency > maxConcurrencyCap {
			bad(s.line, "backend %q: maxConcurrency must be 1 to %d", s.Name, maxConcurrencyCap)
		}
		if s.BundleSize < 1 || s.BundleSize > maxBundleSize {
			bad(s.line, "backend %q: bundleSize must be 1 to %d", s.Name, maxBundleSize)
		}
		if s.OnFailure != OnFailureFail && s.OnFailure != OnFailureBuiltin {
			bad(s.line, "backend %q: onFailure must be fail or builtin, not %q", s.Name, s.OnFailure)
		}
		if s.CacheEntries < 0 || s.CacheEntries > maxCacheEntries {
			bad(s.line, "backend %q: cacheEntries must be 0 to %d", s.Name, maxCacheEntries)
		}
		if *s.Retries < 0 || *s.Retries > maxRetries {
			bad(s.line, "backend %q: retries must be 0 to %d", s.Name, maxRetries)
		}
		if s.Timeout.Duration <= 0 || s.Timeout.Duration > 10*time.Minute {
			bad(s.line, "backend %q: timeout must be above 0 and at most 10m", s.Name)
		}
		switch s.ReasoningEffort {
		case "", "low", "medium", "high":
		default:
			bad(s.line, "backend %q: reasoningEffort must be low, medium or high", s.Name)
		}
		if s.MaxTokens < 0 || s.MaxTokens > 32768 {
			bad(s.line, "backend %q: maxTokens must be 0 to 32768", s.Name)
		}
		if s.MaxPromptBytes < minPromptBytes || s.MaxPromptBytes > maxPromptBytesCap {
			bad(s.line, "backend %q: maxPromptBytes must be %d to %d", s.Name, minPromptBytes, maxPromptBytesCap)
		}
	}
	for i := range f.Backends {
		s := &f.Backends[i]
		if s.ExpeditedBackend != "" && !names[s.ExpeditedBackend] {
			bad(s.line, "backend %q: expeditedBackend %q is not a backend of this file", s.Name, s.ExpeditedBackend)
		}
	}
	if f.Default != "" && !names[f.Default] && f.Default != BuiltinStack {
		errs = append(errs, fmt.Errorf("default %q is not a backend of this file", f.Default))
	}
	return errors.Join(errs...)
}

func (s *Spec) applyDefaults() {
	if s.Timeout.Duration == 0 {
		s.Timeout.Duration = 30 * time.Second
	}
	if s.MaxConcurrency == 0 {
		s.MaxConcurrency = 16
	}
	if s.BundleSize == 0 {
		s.BundleSize = 8
	}
	if s.OnFailure == "" {
		s.OnFailure = OnFailureFail
	}
	if s.CacheTTL == nil {
		s.CacheTTL = &Duration{10 * time.Minute}
	}
	if s.CacheEntries == 0 {
		s.CacheEntries = 10_000
	}
	if s.MaxPromptBytes == 0 {
		s.MaxPromptBytes = 32 << 10
	}
	if s.Retries == nil {
		two := 2
		s.Retries = &two
	}
	s.URL = strings.TrimRight(s.URL, "/")
}
