"""The built docs site in a real browser: headless chromium loads pages from a local HTTP server
into frames of a check page, whose script reports what a reader would see broken (images that
did not load, a missing anchor, a page without furo's navigation)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import subprocess
import threading
from pathlib import Path

_CHECK = """<!doctype html><html><body><pre id="result">running</pre><script>
const pages = %(pages)s, anchors = %(anchors)s;
const out = {pages: [], problems: [], images: 0};
function check(page) {
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.style.width = "1280px";
    frame.style.height = "20000px";  // every image in view: none waits for lazy loading
    frame.onload = () => setTimeout(() => {
      const doc = frame.contentDocument;
      for (const image of doc.images) {
        out.images++;
        if (!(image.complete && image.naturalWidth > 0))
          out.problems.push(page + ": image " + image.getAttribute("src") + " did not load");
      }
      if (anchors[page] && !doc.getElementById(anchors[page]))
        out.problems.push(page + ": no anchor " + anchors[page]);
      if (!doc.querySelector(".sidebar-tree"))
        out.problems.push(page + ": no navigation sidebar (the theme did not render)");
      out.pages.push(page);
      frame.remove();
      resolve();
    }, 300);
    frame.src = page;
    document.body.appendChild(frame);
  });
}
(async () => {
  for (const page of pages) await check(page);
  document.getElementById("result").textContent = JSON.stringify(out);
})();
</script></body></html>"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    check_page = b""

    def do_GET(self):
        if self.path == "/_check.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(self.check_page)
        else:
            super().do_GET()

    def log_message(self, *args):
        pass


def check_pages(browser: str, site: Path, pages: list[str], anchors: dict[str, str]) -> dict:
    """Loads `pages` (paths under `site`) in `browser` and returns the check page's report:
    ``{"pages": [...loaded...], "problems": [...], "images": count}``."""
    handler = functools.partial(_Handler, directory=str(site))
    _Handler.check_page = (
        _CHECK % {"pages": json.dumps(pages), "anchors": json.dumps(anchors)}
    ).encode()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/_check.html"
        done = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--virtual-time-budget=60000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        server.shutdown()
        server.server_close()
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    if found is None or found.group(1) == "running":
        raise AssertionError(
            f"the browser gave no report:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return json.loads(html.unescape(found.group(1)))
