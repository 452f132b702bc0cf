#!/usr/bin/env bash
# Install sparktop's wheel into a fresh venv with every runtime dependency at the lowest version pyproject.toml
# allows (scripts/floors.py), then run what a user runs first (without the `web` extra: `sparktop web` must say
# how to add it) and, with the extra, the unit tests: a floor that cannot be installed or that lacks something
# sparktop uses fails here, not on a user's machine. Run from the repository root.
set -euo pipefail
work=$(mktemp -d)
trap 'kill "${serve_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

python3 scripts/floors.py > "$work/floors.txt"
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --upgrade pip build >/dev/null
"$py" -m build -q --wheel --outdir "$work/dist" . >/dev/null
wheel=$(echo "$work"/dist/sparktop-*.whl)
"$py" -m pip install -q -c "$work/floors.txt" "$wheel"  # without the web extra, first
# The unit tests' own tools (not sparktop's dependencies: not held to floors).
"$py" -m pip install -q -c "$work/floors.txt" pytest pytest-asyncio hypothesis pytest-httpserver pytest-xdist \
  jsonschema argparse-manpage
echo "floors: $(tr '\n' ' ' < "$work/floors.txt")"

cd "$work"  # the installed wheel, not the source tree
venv_bin="$work/venv/bin"
"$venv_bin/sparktop" --once > /dev/null
"$venv_bin/sparktop" plan --list > /dev/null
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv_bin/sparktop" serve --demo --listen "127.0.0.1:$port" > /dev/null 2>&1 &
serve_pid=$!
"$py" - "$port" <<'PY'
import sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/metrics"
for _ in range(100):
    try:
        body = urllib.request.urlopen(url, timeout=2).read().decode()
        break
    except OSError:
        time.sleep(0.2)
else:
    raise SystemExit(f"no scrape from {url}")
assert "sparktop_pool_total_bytes" in body, body[:200]
print(f"floors: one scrape of sparktop serve, {len(body.splitlines())} lines")
PY
# Without the web extra, `sparktop web` says the pip command in one line and exits 2.
web_rc=0
"$venv_bin/sparktop" web --demo 2> "$work/web.err" || web_rc=$?
if [ "$web_rc" != 2 ] || [ "$(wc -l < "$work/web.err")" != 1 ] \
  || ! grep -qF "pip install 'sparktop[web]'" "$work/web.err"; then
  echo "floors: sparktop web without the web extra exited $web_rc:" >&2; cat "$work/web.err" >&2; exit 1
fi
echo "floors: without the web extra: $(cat "$work/web.err")"
cd - > /dev/null
"$py" -m pip install -q -c "$work/floors.txt" "$wheel[web]"  # the unit tests cover the browser view too
# The unit tests against the installed floors: the source tree's tests, the wheel's package (the pytest
# script, not `python -m`, which would put the source tree first on sys.path).
"$venv_bin/pytest" -q -n 4 -p no:cacheprovider tests/unit --import-mode=append
