#!/usr/bin/env bash
# Build Batsim 4.2.1, stock or with engine/batsim-google.patch, or the scheduler batsched 1.4.0, on
# Debian (bookworm or newer) with Debian's SimGrid 3.32, outside this repository.
#
#   engine/build-batsim.sh --prefix /opt/batsim/patched            # patched, sources cloned
#   engine/build-batsim.sh --prefix /opt/batsim/stock --stock      # stock Batsim 4.2.1
#   engine/build-batsim.sh --prefix /opt/batsched --batsched       # batsched 1.4.0
#
# The small dependencies that Debian lacks (intervalset, redox, and for batsched loguru) are built
# as static libraries in the build directory, so the installed binary needs only Debian's shared
# libraries; intervalset and loguru get engine/intervalset and engine/loguru's meson builds when
# their trees have none. Every source is cloned from its public repository unless given as a local
# tree (--source, --batsched-source, --intervalset-source, --redox-source, --loguru-source); a
# given tree is copied, never modified.
set -euo pipefail

BATSIM_REPO=https://gitlab.inria.fr/batsim/batsim.git
BATSIM_REF=v4.2.1
INTERVALSET_REPO=https://gitlab.inria.fr/batsim/intervalset.git
INTERVALSET_REF=v1.2.0
REDOX_REPO=https://github.com/hmartiro/redox.git
BATSCHED_REPO=https://gitlab.inria.fr/batsim/batsched.git
BATSCHED_REF=v1.4.0
LOGURU_REPO=https://github.com/emilk/loguru.git
LOGURU_REF=v2.1.0
DEBIAN_PACKAGES=(
    build-essential ca-certificates cmake git meson ninja-build patch pkg-config
    libsimgrid-dev libboost-dev rapidjson-dev libpugixml-dev libdocopt-dev
    cppzmq-dev libzmq3-dev libhiredis-dev libev-dev
    libgtest-dev # intervalset's own tests
)
BATSCHED_PACKAGES=(libgmp-dev libboost-locale-dev libboost-regex-dev libboost-system-dev)

ENGINE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_DIR=$(dirname "$ENGINE_DIR")
PATCH_FILE=$ENGINE_DIR/batsim-google.patch

usage() {
    cat <<EOF
Usage: $0 --prefix DIR [options]

  --prefix DIR               install into DIR (DIR/bin/batsim, or DIR/bin/batsched); required
  --stock                    build stock Batsim 4.2.1 (default: with batsim-google.patch)
  --batsched                 build batsched 1.4.0 instead of Batsim
  --source DIR               Batsim $BATSIM_REF source tree (default: clone $BATSIM_REPO)
  --batsched-source DIR      batsched $BATSCHED_REF source tree (default: clone $BATSCHED_REPO)
  --intervalset-source DIR   intervalset source tree (default: clone $INTERVALSET_REPO)
  --redox-source DIR         redox source tree (default: clone $REDOX_REPO)
  --loguru-source DIR        loguru source tree, for batsched (default: clone $LOGURU_REPO)
  --build-dir DIR            where to build (default: a new temporary directory, removed at the end)
  --no-apt                   do not install the Debian packages (they are installed when root)
  --jobs N                   parallel compile jobs (default: nproc)
EOF
}

die() {
    echo "build-batsim.sh: $*" >&2
    exit 1
}

prefix=""
stock=false
batsched=false
batsim_source=""
batsched_source=""
loguru_source=""
intervalset_source=""
redox_source=""
build_dir=""
use_apt=true
jobs=$(nproc)
while (($#)); do
    case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --stock) stock=true; shift ;;
    --batsched) batsched=true; shift ;;
    --source) batsim_source=${2:?--source needs a directory}; shift 2 ;;
    --batsched-source) batsched_source=${2:?--batsched-source needs a directory}; shift 2 ;;
    --loguru-source) loguru_source=${2:?--loguru-source needs a directory}; shift 2 ;;
    --intervalset-source) intervalset_source=${2:?--intervalset-source needs a directory}; shift 2 ;;
    --redox-source) redox_source=${2:?--redox-source needs a directory}; shift 2 ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --no-apt) use_apt=false; shift ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
    esac
done
[[ -n $prefix ]] || { usage >&2; die "--prefix is required"; }
if $batsched; then
    $stock && die "--stock is an option of Batsim's build, not batsched's"
    [[ -z $batsim_source ]] || die "--source is Batsim's source; batsched's is --batsched-source"
else
    [[ -z $batsched_source && -z $loguru_source ]] ||
        die "--batsched-source and --loguru-source need --batsched"
fi

# Nothing is written inside the repository: neither the build nor the installation.
inside_repo() {
    [[ $1 == "$REPO_DIR" || $1 == "$REPO_DIR"/* ]]
}
prefix=$(realpath -m "$prefix")
inside_repo "$prefix" && die "--prefix $prefix is inside the repository $REPO_DIR"
if [[ -n $build_dir ]]; then
    build_dir=$(realpath -m "$build_dir")
    inside_repo "$build_dir" && die "--build-dir $build_dir is inside the repository $REPO_DIR"
else
    build_dir=$(mktemp -d -t batsim-build.XXXXXX)
    trap 'rm -rf "$build_dir"' EXIT
fi
mkdir -p "$prefix" "$build_dir"
deps=$build_dir/deps

if $use_apt && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    apt-get update -q
    # Installing the list also upgrades any of its packages (and their dependencies) already present.
    packages=("${DEBIAN_PACKAGES[@]}")
    $batsched && packages+=("${BATSCHED_PACKAGES[@]}")
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
fi

# fetch NAME SOURCE_DIR REPO [REF]: a private copy of a given tree, or a shallow clone.
fetch() {
    local name=$1 source=$2 repo=$3 ref=${4:-}
    local dest=$build_dir/$name
    rm -rf "$dest"
    if [[ -n $source ]]; then
        [[ -d $source ]] || die "$name source $source is not a directory"
        cp -a "$source" "$dest"
    else
        git clone --quiet --depth 1 ${ref:+--branch "$ref"} "$repo" "$dest"
    fi
}

echo "== intervalset"
fetch intervalset "$intervalset_source" "$INTERVALSET_REPO" "$INTERVALSET_REF"
# A tree of intervalset's two source files without a build of its own gets engine/intervalset's.
[[ -f $build_dir/intervalset/meson.build ]] || cp "$ENGINE_DIR/intervalset/meson.build" "$build_dir/intervalset/"
meson setup "$build_dir/intervalset/build" "$build_dir/intervalset" --buildtype=release \
    --default-library=static --prefix="$deps" --libdir=lib
ninja -C "$build_dir/intervalset/build" -j "$jobs" install
[[ -f $deps/lib/libintervalset.a ]] || die "intervalset did not install a static library"

echo "== redox"
fetch redox "$redox_source" "$REDOX_REPO"
# LIB_SUFFIX=/ keeps redox's library in lib/ (its CMakeLists.txt picks lib64 on 64-bit systems).
cmake -S "$build_dir/redox" -B "$build_dir/redox/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$deps" -DLIB_SUFFIX=/ -Dlib=OFF -Dstatic_lib=ON \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5
cmake --build "$build_dir/redox/build" -j "$jobs" --target install
# redox installs no pkg-config file; Batsim's meson.build asks pkg-config for 'redox'.
mkdir -p "$deps/lib/pkgconfig"
cat >"$deps/lib/pkgconfig/redox.pc" <<EOF
prefix=$deps
Name: redox
Description: C++11 client for Redis (static)
Version: 0.3.0
Cflags: -I\${prefix}/include
Libs: -L\${prefix}/lib -lredox_static -lhiredis -lev -lpthread
EOF

if $batsched; then
    echo "== loguru"
    fetch loguru "$loguru_source" "$LOGURU_REPO" "$LOGURU_REF"
    [[ -f $build_dir/loguru/meson.build ]] || cp "$ENGINE_DIR/loguru/meson.build" "$build_dir/loguru/"
    meson setup "$build_dir/loguru/build" "$build_dir/loguru" --buildtype=release \
        --default-library=static --prefix="$deps" --libdir=lib
    ninja -C "$build_dir/loguru/build" -j "$jobs" install

    echo "== batsched"
    fetch batsched "$batsched_source" "$BATSCHED_REPO" "$BATSCHED_REF"
    grep -q "version: '1.4.0'" "$build_dir/batsched/meson.build" || die "the batsched source is not version 1.4.0"
    PKG_CONFIG_PATH=$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
        meson setup "$build_dir/batsched/build" "$build_dir/batsched" --buildtype=release --prefix="$prefix"
    ninja -C "$build_dir/batsched/build" -j "$jobs" install
    echo "== installed $prefix/bin/batsched, version $("$prefix/bin/batsched" --version)"
    exit 0
fi

echo "== batsim ($($stock && echo stock || echo patched))"
fetch batsim "$batsim_source" "$BATSIM_REPO" "$BATSIM_REF"
grep -q "version: '4.2.1'" "$build_dir/batsim/meson.build" || die "the Batsim source is not version 4.2.1"
if ! $stock; then
    patch -p1 -d "$build_dir/batsim" <"$PATCH_FILE"
fi
# Batsim names its version after `git describe` when it can (v4.2.1, or v4.2.1-dirty once patched);
# hiding git gives the project's own version, 4.2.1 or 4.2.1+batsim-google, whatever the source.
GIT_DIR=/nonexistent PKG_CONFIG_PATH=$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
    meson setup "$build_dir/batsim/build" "$build_dir/batsim" --buildtype=release --prefix="$prefix"
ninja -C "$build_dir/batsim/build" -j "$jobs" install

echo "== installed $prefix/bin/batsim, version $("$prefix/bin/batsim" --version)"
