"""A page opened in headless Chromium (installed by scripts/bootstrap.sh) that measures itself: what
overflows at a width, which images loaded, how often each chart title is read."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

MEASURE = """<script>
window.addEventListener("load", () => {
  const width = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll("body *")]
    .filter(e => e.getBoundingClientRect().right > width + 0.5)
    .map(e => e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + ": " + (e.textContent || e.alt || "").slice(0, 60));
  const images = [...document.images];
  // What a reader sees: the page's text and the text drawn into each chart image (SVG).
  const drawn = images.map(i => {
    try {
      const bytes = Uint8Array.from(atob(i.src.split(",")[1]), c => c.charCodeAt(0));
      const svg = new DOMParser().parseFromString(new TextDecoder().decode(bytes), "image/svg+xml");
      return [...svg.querySelectorAll("text")].map(t => t.textContent.trim()).join("\\n");
    } catch (e) { return ""; }
  });
  const seen = document.body.innerText + "\\n" + drawn.join("\\n");
  const titles = [...document.querySelectorAll("figcaption")].map(f => [f.textContent, seen.split(f.textContent).length - 1]);
  const out = document.createElement("pre");
  out.id = "measure";
  out.textContent = JSON.stringify({width, scroll: document.documentElement.scrollWidth, wide,
    images: images.length, broken: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt), titles});
  document.body.appendChild(out);
});
</script>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("Chromium is not installed: `bash scripts/bootstrap.sh` installs it (apt package chromium)")
    return found


def measure(page, width: int = 1280) -> dict:
    done = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                           f"--window-size={width},900", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="measure">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the page did not measure itself: {done.stderr[-500:]}"
    return json.loads(html.unescape(found.group(1)))
