#!/usr/bin/env bash
# Installs Tansu 0.6.0 (a Kafka-protocol broker with in-memory storage) for
# the Kafka tests and benchmark, once, outside the clone, and prints the
# path of its binary. About 8 minutes on 2 cores the first time.
#
# Usage: tansu=$(bash scripts/tansu.sh)
# The install directory is $ANNAL_TOOLS (default /var/tmp/annal-tools).
set -euo pipefail
version=0.6.0
root="${ANNAL_TOOLS:-/var/tmp/annal-tools}"
bin="$root/bin/tansu"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "$version"; then
  echo "$bin"
  exit 0
fi
echo "installing Tansu $version into $root (cargo install, about 8 minutes)" >&2
mkdir -p "$root"
# Its own target directory: the build is not the project's and must not
# share locks or features with it.
CARGO_TARGET_DIR="$root/build" cargo install tansu --version "$version" --locked \
  --features dynostore --root "$root" >&2
rm -rf "$root/build"
"$bin" --version >&2
echo "$bin"
