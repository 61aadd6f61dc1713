#!/usr/bin/env bash
# System packages the tests use (installed when missing, as root; skipped quietly otherwise):
# chromium renders the walkthrough report and the explorer's page in a real browser;
# chromium-driver lets Selenium drive it (tests/test_explore_browser.py); fonts-wqy-microhei
# draws the explorer's Chinese labels (without a CJK font they come out as empty boxes).
set -u
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
fc-list :lang=zh 2>/dev/null | grep -q . || need+=(fonts-wqy-microhei)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} (for the browser tests)"
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
    || echo "could not install ${need[*]}: the browser tests will be skipped"
else
  echo "${need[*]} missing and not root: the browser tests will be skipped"
fi
exit 0
