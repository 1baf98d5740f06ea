#!/usr/bin/env bash
# Builds the release binaries of research: static (CGO_ENABLED=0), stamped
# with the version (`research version` prints it), for Linux, macOS and
# Windows on amd64 and arm64, with a SHA256SUMS file beside them.
#
#   scripts/release.sh v1.2.3              # into dist/v1.2.3/
#   scripts/release.sh v1.2.3 /tmp/out     # into /tmp/out/
#   RELEASE_TARGETS="linux/amd64" scripts/release.sh v1.2.3
#
# The files are named research_<version>_<os>_<arch>[.exe], and beside
# each research-temporal_<version>_<os>_<arch>[.exe], the program research
# hands research worker, batch and --temporal to (built with the tag
# temporal; docs/temporal.md): install it as research-temporal next to
# research. Check a download with: sha256sum --check --ignore-missing SHA256SUMS
set -euo pipefail

usage() {
  echo "usage: scripts/release.sh VERSION [OUTDIR]   (VERSION like v1.2.3 or v1.2.3-rc.1)" >&2
  exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
version=$1
# A semantic version with the leading v, as Go modules spell them: it goes
# into file names and -ldflags, so nothing else is let through.
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]]; then
  echo "scripts/release.sh: $version is not a version such as v1.2.3 or v1.2.3-rc.1" >&2
  exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/dist/$version}
targets=${RELEASE_TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}

if command -v sha256sum >/dev/null 2>&1; then
  sum() { sha256sum "$@"; }
elif command -v shasum >/dev/null 2>&1; then
  sum() { shasum -a 256 "$@"; }
else
  echo "scripts/release.sh: neither sha256sum nor shasum is installed: one is needed for SHA256SUMS" >&2
  exit 1
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/research_"$version"_* "$out"/research-temporal_"$version"_* "$out/SHA256SUMS"

cd "$root"
names=()
for target in $targets; do
  goos=${target%/*}
  goarch=${target#*/}
  if [ -z "$goos" ] || [ -z "$goarch" ] || [ "$goos" = "$target" ]; then
    echo "scripts/release.sh: target $target is not OS/ARCH, such as linux/amd64" >&2
    exit 2
  fi
  for program in research research-temporal; do
    name=${program}_${version}_${goos}_${goarch}
    [ "$goos" = windows ] && name=$name.exe
    tags=
    [ "$program" = research-temporal ] && tags=temporal
    echo "building $name"
    CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch \
      go build -trimpath -tags "$tags" -ldflags "-s -w -X main.version=$version" -o "$out/$name" ./cmd/research
    names+=("$name")
  done
done

(cd "$out" && sum "${names[@]}" > SHA256SUMS)
echo "wrote ${#names[@]} binaries and SHA256SUMS to $out"
