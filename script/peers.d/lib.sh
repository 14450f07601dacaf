# Shared by the peer scripts: find Python 3.13, and make a venv keyed by a hash of its script.
# A peer script sources this, then calls `peer_venv <name> <script> <packages...>`; the venv
# is rebuilt only when the peer's script changed. The servers need packages newer than the
# ones the project pins (wyoming 1.10.x), hence one venv per peer under .peers/<name>.

find_python() {
  if command -v python3.13 >/dev/null 2>&1 && python3.13 -c 'import sys' >/dev/null 2>&1; then
    command -v python3.13; return
  fi
  if command -v pyenv >/dev/null 2>&1; then
    local v
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.13(\.|$)' | sort -rV); do
      PYENV_VERSION="$v" pyenv which python3.13 2>/dev/null && return
    done
  fi
  local p
  for p in "$HOME"/.pyenv/versions/3.13*/bin/python3.13 /usr/local/bin/python3.13 /usr/bin/python3.13; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  return 1
}

# peer_fresh <dir> <script>: true when <dir> was built by this exact <script>.
peer_fresh() {
  local stamp=$1/.peers-stamp want
  want=$(cat "$2" script/peers.d/lib.sh | sha256sum | cut -d' ' -f1)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]
}

# peer_stamp <dir> <script>: mark <dir> as built by <script>.
peer_stamp() {
  cat "$2" script/peers.d/lib.sh | sha256sum | cut -d' ' -f1 > "$1/.peers-stamp"
}

# peer_venv <dir> <packages...>: a fresh venv in <dir>/venv with <packages> installed.
peer_venv() {
  local dir=$1 py
  shift
  if ! py=$(find_python); then
    echo "script/peers: Python 3.13 is needed and none was found." >&2
    exit 1
  fi
  echo "script/peers: creating $dir with $py" >&2
  rm -rf "$dir"
  "$py" -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}
