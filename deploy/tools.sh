#!/usr/bin/env bash
# Builds (once) and prints the path of a tool the tests and scripts need.
#   deploy/tools.sh helm    Helm 3, built with `go install` (a few minutes
#                           the first time), cached in $XPS_TOOLS
# XPS_TOOLS defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/xps/bin; a tool
# already there at the pinned version is reused.
set -euo pipefail
HELM_VERSION=v3.22.0
dir=${XPS_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/xps/bin}
mkdir -p "$dir"
case "${1:-}" in
helm)
	bin="$dir/helm-$HELM_VERSION"
	if [ ! -x "$bin" ]; then
		echo "building helm $HELM_VERSION into $dir (go install, a few minutes the first time)" >&2
		tmp=$(mktemp -d)
		trap 'rm -rf "$tmp"' EXIT
		(cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") >&2
		mv "$tmp/helm" "$bin"
	fi
	echo "$bin"
	;;
*)
	echo "usage: $0 helm" >&2
	exit 2
	;;
esac
