#!/usr/bin/env bash
# System packages the tests use (installed when missing, as root; skipped quietly otherwise):
# chromium renders the walkthrough report and the explorer's page in a real browser;
# chromium-driver lets Selenium drive it (tests/test_explore_browser.py); fonts-wqy-microhei
# (a small CJK font, ~5 MB) draws the Chinese labels of both pages, which are empty boxes without
# one (the browser tests fail then).
set -u
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
# fc-list is part of fontconfig, which chromium depends on; no CJK font covers 我 (U+6211) yet?
if ! command -v fc-list >/dev/null 2>&1 || [ -z "$(fc-list ':charset=6211' file 2>/dev/null)" ]; then
  need+=(fonts-wqy-microhei)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} with apt-get (for the browser tests of the walkthrough report and the explorer)"
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
    || echo "could not install ${need[*]}: the browser tests will be skipped (no chromium) or fail (no CJK font)"
else
  echo "${need[*]} missing and not root: the browser tests will be skipped (no chromium) or fail (no CJK font)"
fi
exit 0
