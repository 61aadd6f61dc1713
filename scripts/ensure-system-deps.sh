#!/usr/bin/env bash
# System packages the tests use (installed when missing, as root; skipped quietly otherwise):
# chromium renders the walkthrough report in a real browser.
set -u
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} (for the browser test)"
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
    || echo "could not install ${need[*]}: the browser test will be skipped"
else
  echo "${need[*]} missing and not root: the browser test will be skipped"
fi
exit 0
