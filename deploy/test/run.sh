#!/usr/bin/env bash
# make test-deploy: the deployment files, tested here with no container
# registry (docs/operations.md):
#   1. installs podman, runc and mmdebstrap from Debian when missing;
#   2. makes the base images deploy/Containerfile names (base-images.sh);
#   3. builds the image from deploy/Containerfile as written, --pull=never;
#   4. installs helm from the Go module proxy (cached);
#   5. builds the images compose.yaml needs besides ours: the S3 store and
#      a stand-in for the official PostgreSQL image (deploy/test/postgres);
#   6. runs the tests of the deploy/ module: the image run read-only with a
#      /data volume (text, image and video jobs through it), compose.yaml
#      against the Compose Specification and brought up with podman-compose
#      (a synchronous job through api, an asynchronous one through worker),
#      the Helm chart.
# Base images, helm and the podman layer cache persist between runs under
# $DEPLOY_CACHE and podman's storage.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

export DEPLOY_CACHE="${DEPLOY_CACHE:-$HOME/.cache/contenteval-deploy}"
export CONTAINERS_CONF="$root/deploy/test/containers.conf"
HELM_VERSION=v3.22.0
IMAGE="${CONTENTEVAL_DEPLOY_IMAGE:-localhost/contenteval:test-deploy}"
mkdir -p "$DEPLOY_CACHE"

step() { printf -- '--- test-deploy: %s (%ss)\n' "$*" "$SECONDS"; }

step "tools"
missing=()
for tool in podman:podman runc:runc mmdebstrap:mmdebstrap newuidmap:uidmap ffmpeg:ffmpeg podman-compose:podman-compose; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
# Compose's services find each other by name: with podman 4.3's CNI
# networks that takes the dnsname plugin.
[ -x /usr/lib/cni/dnsname ] || missing+=(golang-github-containernetworking-plugin-dnsname)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
fi

step "base images"
"$root/deploy/test/base-images.sh"

step "podman build -f deploy/Containerfile"
podman build --format docker --pull=never --network=host --quiet -f deploy/Containerfile -t "$IMAGE" \
  --build-arg VERSION="test-deploy" --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" . >/dev/null
podman image inspect --format 'image {{.Id}}: {{.Size}} bytes' "$IMAGE"

step "helm $HELM_VERSION"
helm_dir="$DEPLOY_CACHE/helm-$HELM_VERSION"
if [ ! -x "$helm_dir/helm" ]; then
  GOBIN="$helm_dir" GOFLAGS=-buildvcs=false go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
export HELM="$helm_dir/helm"

step "compose images"
POSTGRES_IMAGE=localhost/contenteval-test-postgres:15
podman build --pull=never --network=host --quiet -t "$POSTGRES_IMAGE" deploy/test/postgres >/dev/null
podman build --pull=never --network=host --quiet -t localhost/contenteval-s3:v1.8.0 deploy/s3 >/dev/null
export CONTENTEVAL_DEPLOY_COMPOSE=1 CONTENTEVAL_DEPLOY_POSTGRES_IMAGE="$POSTGRES_IMAGE"

step "go test (deploy/)"
cd deploy
CONTENTEVAL_DEPLOY_IMAGE="$IMAGE" go test -race -count=1 -timeout 20m -v ./... 2>&1 | tee "$DEPLOY_CACHE/last-test.log"
step "done"
