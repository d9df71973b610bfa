# contenteval — the two commands: `make run` and `make test`.
GO        ?= go
PG_URL    ?= postgres://root@127.0.0.1:5432/test?sslmode=disable
GOTESTFLAGS ?= -race -count=1 -timeout 20m

.PHONY: ocr-tools proto-tools generate-proto test-sdk-js run test test-postgres generate verify verify-mod lint lint-go lint-staticcheck lint-openapi bench fuzz docs-assets node_modules build

## run: start the server on :8080 with the embedded SQLite database (./data)
run:
	$(GO) run ./cmd/contenteval serve

## build: the contenteval binary in ./bin
build:
	$(GO) build -o bin/contenteval ./cmd/contenteval

## test: the whole suite with -race (SQLite; PostgreSQL too when CONTENTEVAL_TEST_DATABASE_URL is set);
## installs the OCR and media tools from Debian first when they are missing (the image and video tests run them)
test: ocr-tools media-tools
	$(GO) test $(GOTESTFLAGS) ./...

## test-postgres: the suite on SQLite and on the local PostgreSQL
test-postgres: ocr-tools media-tools
	CONTENTEVAL_TEST_DATABASE_URL='$(PG_URL)' $(GO) test $(GOTESTFLAGS) ./...

## test-sdk-js: the official Clavata JS SDK (npm @clavata/sdk) in its own node process against a real server, on SQLite and the local PostgreSQL
test-sdk-js: node_modules
	CONTENTEVAL_TEST_DATABASE_URL='$(PG_URL)' $(GO) test $(GOTESTFLAGS) -run '^TestClavataJSSDK$$' ./cmd/contenteval/

## generate: regenerate gen/ from openapi.yaml and proto/ (never edit gen/ by hand)
generate: generate-proto
	$(GO) tool oapi-codegen -config oapi-codegen.yaml openapi.yaml
	$(GO) tool oapi-codegen -config oapi-codegen.client.yaml openapi.yaml

# The generated files name the protoc that made them, so one version is
# pinned: Debian bookworm's protobuf-compiler (make proto-tools). The
# plugins are go.mod tools.
PROTOC_VERSION ?= libprotoc 3.21.12
PROTO_FILES := $(sort $(wildcard proto/clavata/*/v1/*.proto))

## generate-proto: regenerate gen/clavatapb from proto/ (the Clavata gRPC surface, DESIGN §14)
generate-proto: proto-tools
	@test "$$(protoc --version)" = "$(PROTOC_VERSION)" || { \
	  echo "make generate-proto needs $(PROTOC_VERSION) (Debian bookworm protobuf-compiler); found $$(protoc --version)" >&2; exit 1; }
	rm -f gen/clavatapb/*.pb.go
	protoc -I proto \
	  --plugin=protoc-gen-go="$$($(GO) tool -n protoc-gen-go)" \
	  --plugin=protoc-gen-go-grpc="$$($(GO) tool -n protoc-gen-go-grpc)" \
	  --go_out=. --go_opt=module=github.com/contenteval/contenteval \
	  --go-grpc_out=. --go-grpc_opt=module=github.com/contenteval/contenteval \
	  $(PROTO_FILES)

## verify: fail when gen/ is stale or go.mod/go.sum are not what go mod tidy makes
verify: generate verify-mod
	git diff --exit-code -- gen/ || (echo "gen/ is stale: run make generate and commit" >&2; exit 1)
	@test -z "$$(git status --porcelain -- gen/)" || (echo "gen/ has untracked generated files" >&2; exit 1)

## verify-mod: fail when go mod tidy changes go.mod or go.sum (a direct requirement marked
## // indirect, a missing or unused one); needs the module proxy, as go mod download does
verify-mod:
	$(GO) mod tidy
	git diff --exit-code -- go.mod go.sum || (echo "go.mod/go.sum are not tidy: run go mod tidy and commit" >&2; exit 1)

## lint: gofmt, go vet, staticcheck and the OpenAPI lint (redocly)
lint: lint-go lint-staticcheck lint-openapi

lint-go:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# staticcheck is installed from the module proxy into .bin (pinned). Findings fail
# the lint; a proxy that refuses the download (seen here once: 403) only warns,
# so that an outage of the proxy does not block every change.
STATICCHECK_VERSION ?= v0.8.2
lint-staticcheck:
	@if GOBIN=$(CURDIR)/.bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); then \
	  echo "staticcheck $(STATICCHECK_VERSION)"; $(CURDIR)/.bin/staticcheck ./...; \
	else echo "WARNING: could not install staticcheck $(STATICCHECK_VERSION) from the module proxy; not run" >&2; fi

node_modules: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch node_modules

lint-openapi: node_modules
	npx --no-install redocly lint openapi.yaml --config redocly.yaml

## docs-assets: refresh the embedded Redoc bundle served at /docs from npm
docs-assets: node_modules
	cp node_modules/redoc/bundles/redoc.standalone.js node_modules/redoc/bundles/redoc.standalone.js.LICENSE.txt handlers/docs/

## bench: the benchmarks named by the issues (results: bench/README.md)
bench:
	./bench/run.sh

## fuzz: every fuzz target for a short time (FUZZTIME=20s)
FUZZTIME ?= 15s
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

## ocr-tools: install tesseract (OCR of text in images) from Debian when missing
ocr-tools:
	@command -v tesseract >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq tesseract-ocr tesseract-ocr-eng; }

## proto-tools: install protoc (protobuf-compiler, with the well-known .proto files) from Debian when missing
proto-tools:
	@command -v protoc >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq protobuf-compiler; }

## media-tools: install ffmpeg/ffprobe and pocketsphinx (speech recognition, en-us model) from Debian when missing
media-tools:
	@{ command -v ffmpeg && command -v ffprobe && command -v pocketsphinx_continuous && \
	   test -d /usr/share/pocketsphinx/model/en-us/en-us; } >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends ffmpeg pocketsphinx pocketsphinx-en-us; }
