"""The web page: ``page.html`` with the Markdown renderer put in.

The page is one self-contained document (inline CSS and JS, no CDN). The
server fills two slots on every request: a fresh CSP nonce and
``markdown.js``, kept as its own file so it can be tested on its own with
node. It carries no secret: anyone on the machine may fetch it, and its
API calls are authorized by the HttpOnly session cookie of the login link.
"""

from __future__ import annotations

import html
from functools import lru_cache
from importlib import resources

NONCE_SLOT = "{{NONCE}}"
MARKDOWN_SLOT = "/*{{MARKDOWN_JS}}*/"


@lru_cache(maxsize=None)
def asset(name: str) -> str:
    """The text of a file shipped in this package."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def render_page(*, nonce: str) -> str:
    """The page for one request."""
    markdown = asset("markdown.js")
    if "</script" in markdown.lower():
        raise ValueError("markdown.js must not contain '</script'")
    page = asset("page.html").replace(NONCE_SLOT, html.escape(nonce, quote=True))
    return page.replace(MARKDOWN_SLOT, markdown)  # last: nothing is substituted inside it
