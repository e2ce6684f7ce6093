# tests/deps.sh: installs the Debian packages pollen needs, if missing.
# Sourced by tests/run-all.sh and scenarios/campaign.sh; safe to rerun.
pollen_packages="meson ninja-build pkg-config gcc clang llvm libclang-rt-14-dev \
libcriterion-dev libxxhash-dev libdw-dev python3 python3-yaml"

# Extra packages may be named: the tests want dwarves (pahole) too.
pollen_install_deps() {
    local missing=""
    for p in $pollen_packages "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "pollen: installing:$missing" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq $missing >&2
}
