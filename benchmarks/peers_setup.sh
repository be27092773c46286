#!/usr/bin/env bash
# Creates benchmarks/.peers/venv with the peer tools (scikit-mobility 1.3.1 and fastmob),
# pinned by benchmarks/requirements-peers.txt, apart from the project's own environment
# (the peers need numpy 1.x / pandas 1.5; the project uses numpy 2 / pandas 3).
#
# Idempotent: an existing venv is kept when it was installed from the current
# requirements file and both tools still import; otherwise it is rebuilt.
#
# Usage: bash benchmarks/peers_setup.sh          (PYTHON=python3.11 to pick the interpreter)
# Then:  benchmarks/.peers/venv/bin/python benchmarks/peer_attacks.py --help
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
requirements="$here/requirements-peers.txt"
venv="$here/.peers/venv"
stamp="$venv/.requirements.sha256"
python="${PYTHON:-python3}"

want="$(sha256sum "$requirements" | cut -d' ' -f1)"

works() {
    [[ -x "$venv/bin/python" ]] || return 1
    [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] || return 1
    "$venv/bin/python" -W ignore -c \
        'import skmob.privacy.attacks, fastmob.privacy' >/dev/null 2>&1
}

if works; then
    echo "peers venv up to date: $venv"
    exit 0
fi

if ! "$python" -c 'import sys; sys.exit(not ((3, 9) <= sys.version_info[:2] <= (3, 11)))'; then
    echo "error: $python is $("$python" --version 2>&1); the pinned peers need CPython" \
        "3.9-3.11 (pandas 1.5.3 has no newer wheels). Set PYTHON=python3.11." >&2
    exit 2
fi

rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# python-igraph 0.9.11 (a scikit-mobility requirement) has no wheel for every
# interpreter and may build from source; that takes a few minutes on 2 cores.
"$venv/bin/python" -m pip install --quiet -r "$requirements"

"$venv/bin/python" -W ignore -c 'import skmob.privacy.attacks, fastmob.privacy'
echo "$want" >"$stamp"
echo "peers venv ready: $venv"
