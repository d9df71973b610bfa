#!/usr/bin/env bash
# Makes the base images deploy/Containerfile names, from Debian packages and
# the Go toolchain of this machine, since no container registry is reachable
# here (a user's machine pulls the real ones):
#   docker.io/library/debian:bookworm-slim   mmdebstrap, minbase, docs and locales left out,
#                                            /usr merged by symlinks as debootstrap does
#   docker.io/library/golang:1.26-bookworm   that + /usr/local/go + the CA bundle
# The root filesystem tarball and the Go build context are cached under
# $DEPLOY_CACHE, keyed by what makes them.
set -euo pipefail
: "${DEPLOY_CACHE:?}"
mkdir -p "$DEPLOY_CACHE"

DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim
GO_IMAGE=docker.io/library/golang:1.26-bookworm
MIRROR=http://deb.debian.org/debian
# The merged-usr hook merges /usr with symlinks, as debootstrap (and so the
# official images) do. Without it bookworm's init-system-helpers pulls in the
# usrmerge package, which brings full perl (about 50 MB) into the base; the
# official slim image has perl-base only.
MMDEBSTRAP_ARGS=(--variant=minbase --format=tar --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --aptopt='Acquire::Languages "none"'
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*')

key() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }

debian_key=$(key "${MMDEBSTRAP_ARGS[@]}" bookworm "$MIRROR")
debian_tar="$DEPLOY_CACHE/bookworm-slim-$debian_key.tar"
if [ "$(podman image inspect --format '{{index .Labels "contenteval.cache-key"}}' "$DEBIAN_IMAGE" 2>/dev/null)" != "$debian_key" ]; then
  if [ ! -s "$debian_tar" ]; then
    echo "base-images: mmdebstrap bookworm (minutes; cached in $debian_tar)"
    mmdebstrap "${MMDEBSTRAP_ARGS[@]}" bookworm "$debian_tar.part" "$MIRROR" >"$DEPLOY_CACHE/mmdebstrap.log" 2>&1 \
      || { tail -20 "$DEPLOY_CACHE/mmdebstrap.log" >&2; exit 1; }
    mv "$debian_tar.part" "$debian_tar"
  fi
  podman import --change "LABEL contenteval.cache-key=$debian_key" --change 'CMD ["bash"]' \
    "$debian_tar" "$DEBIAN_IMAGE" >/dev/null
fi

go_version=$(head -1 /usr/local/go/VERSION)
go_key=$(key "$debian_key" "$go_version" "$(sha256sum /etc/ssl/certs/ca-certificates.crt)")
if [ "$(podman image inspect --format '{{index .Labels "contenteval.cache-key"}}' "$GO_IMAGE" 2>/dev/null)" != "$go_key" ]; then
  ctx="$DEPLOY_CACHE/go-context-$go_key"
  if [ ! -d "$ctx" ]; then
    rm -rf "$ctx.part" && mkdir -p "$ctx.part"
    cp -a /usr/local/go "$ctx.part/go"
    cp /etc/ssl/certs/ca-certificates.crt "$ctx.part/"
    mv "$ctx.part" "$ctx"
  fi
  podman build --pull=never --quiet -t "$GO_IMAGE" --label "contenteval.cache-key=$go_key" -f - "$ctx" >/dev/null <<CONTAINERFILE
FROM $DEBIAN_IMAGE
COPY go /usr/local/go
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
CONTAINERFILE
fi
echo "base-images: $DEBIAN_IMAGE ($debian_key), $GO_IMAGE ($go_version)"
