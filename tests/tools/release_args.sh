# shellcheck shell=bash
# Sourced by tests/tools/sglang-release.sh and gateway-release.sh: the VERSION and FROM of
# `make <tool> VERSION=x.y.z [FROM=a.b.c]`, checked the same way for both.
# release_args TOOL PROFILE EXAMPLE VERSION [FROM] sets version, from (default: the pin) and pin (version: of PROFILE);
# exit 2 with the make command's name when one is not a release number or VERSION is FROM.
release_args() {
    local tool="$1" profile="$2" example="$3" pair
    version="${4:?usage: ${tool}.sh VERSION [FROM]}"
    pin="$(sed -n -E 's/^version:[[:space:]]*"?([0-9][0-9.]*)"?.*/\1/p' "${profile}")"
    from="${5:-${pin}}"
    for pair in "VERSION=${version}" "FROM=${from}"; do
        [[ "${pair#*=}" =~ ^[0-9]+\.[0-9]+\.[0-9]+(\.post[0-9]+)?$ ]] || {
            echo "make ${tool}: ${pair} is not a release number such as ${example}" >&2; exit 2; }
    done
    [ "${version}" != "${from}" ] || {
        echo "make ${tool}: VERSION=${version} is FROM (default: the pin of ${profile#"${root}"/}): give another" \
            "release, or FROM=<the release you move from>" >&2; exit 2; }
}
