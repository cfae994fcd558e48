#!/usr/bin/env bash
# Prints the path of a working CPython 3.10 interpreter, or explains what to install.
# Launchpad 0.5.0 and Reverb 0.7.0 publish wheels only up to Python 3.10.
set -u
is_310() { "$@" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 10) else 1)' >/dev/null 2>&1; }

if is_310 python3.10; then command -v python3.10; exit 0; fi
if command -v pyenv >/dev/null 2>&1; then
  version=$(pyenv versions --bare 2>/dev/null | grep '^3\.10' | tail -1)
  if [ -n "$version" ]; then
    candidate="$(pyenv root)/versions/$version/bin/python3.10"
    if is_310 "$candidate"; then echo "$candidate"; exit 0; fi
  fi
fi
for candidate in /usr/bin/python3.10 /usr/local/bin/python3.10; do
  if is_310 "$candidate"; then echo "$candidate"; exit 0; fi
done
cat >&2 <<'MSG'
error: no Python 3.10 interpreter found.
mava_systems needs CPython 3.10 (dm-launchpad 0.5.0 and dm-reverb 0.7.0 have no wheels for newer Pythons).
Install one, for example:  pyenv install 3.10.13   or   apt-get install python3.10 python3.10-venv
MSG
exit 1
