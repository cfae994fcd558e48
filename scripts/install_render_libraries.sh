#!/usr/bin/env bash
# Installs the Debian packages MuJoCo's headless rendering (MUJOCO_GL=egl) needs when any is
# missing: `render()` of the mamujoco environments, hence `evaluate --record`, uses them.
# Without root or apt-get it only says what is missing; mamujoco then refuses to render, naming it.
set -uo pipefail
packages=(libegl1 libopengl0 libegl-mesa0 libgl1-mesa-dri)
command -v dpkg-query >/dev/null || { echo "not a Debian system: install EGL and Mesa's EGL driver for MuJoCo rendering"; exit 0; }
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "MuJoCo rendering needs the Debian packages ${missing[*]} (run this script as root to install them)"
  exit 0
fi
echo "installing ${missing[*]} for MuJoCo's headless rendering"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || echo "could not install ${missing[*]}: mamujoco environments will refuse to render"
