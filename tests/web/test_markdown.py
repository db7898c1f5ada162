"""The page's Markdown renderer (``web/markdown.js``), run with node.

Every case goes through the same ``render`` the page uses; the output is
checked as HTML: visible text, tags, and attributes.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from openprogram_memory.web.page import asset

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

HERE = Path(__file__).resolve().parent
RENDERER = Path(__file__).resolve().parents[2] / "openprogram_memory" / "web" / "markdown.js"
ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "ul", "ol", "li", "blockquote", "pre", "code",
                "strong", "em", "del", "mark", "sup", "span", "section", "a"}


def render_many(sources: list[str], opts: dict | None = None) -> list[str]:
    cases = [{"src": src, "opts": opts or {}} for src in sources]
    done = subprocess.run([NODE, str(HERE / "render_markdown.js"), str(RENDERER)], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def render(source: str) -> str:
    return render_many([source])[0]


class Parsed(HTMLParser):
    """Visible text, tags and attributes of rendered HTML."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.text = ""
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text += data

    def hrefs(self) -> list[str]:
        return [a["href"] for tag, a in self.tags if tag == "a" and a.get("href") is not None]


EVIDENCE_TOPIC = """# Dave

## Work

Dave runs a bike shop.[^e-1175dea39c] ^f888f60e

He opens at nine.[^e-2222222222] Also on weekends.[^e-1175dea39c] ^0a1b2c3d ^aa11bb22

[^e-1175dea39c]: Time: `2024-03`; Sources: [bike shop](../../sources/openprogram/_v2/s1.md#source-8339b8d31a2b4c5d)
[^e-2222222222]: Time: `2024-04`; Sources: [hours](../../sources/openprogram/_v2/s1.md#source-1111111111111111)
"""


def test_footnotes_are_numbered_in_order_of_first_use():
    html = render(EVIDENCE_TOPIC)
    parsed = Parsed(html)
    sups = re.findall(r'<sup[^>]*><a href="#fn-(\d+)"[^>]*>\[(\d+)\]</a></sup>', html)
    assert [n for _, n in sups] == ["1", "2", "1"]  # a repeated label keeps its number
    assert '<section class="footnotes"><hr><ol><li id="fn-1">' in html
    notes = html.split('<section class="footnotes">')[1]
    assert notes.index("bike shop") < notes.index("hours")
    assert "Time: 2024-03; Sources: bike shop" in parsed.text  # the code span and link text
    assert parsed.text.count("\u21a9") == 2  # one back link per note


def test_block_ids_and_evidence_ids_never_reach_the_reading_text():
    parsed = Parsed(render(EVIDENCE_TOPIC))
    for hidden in ("f888f60e", "0a1b2c3d", "aa11bb22", "e-1175dea39c", "e-2222222222", "^", "[^"):
        assert hidden not in parsed.text, hidden
    anchors = [a.get("id") for tag, a in parsed.tags if tag == "span" and a.get("id")]
    assert anchors == ["block-f888f60e", "block-0a1b2c3d", "block-aa11bb22"]  # links to aliases still land
    assert "Dave runs a bike shop." in parsed.text and "Also on weekends." in parsed.text


def test_standalone_block_id_line_is_an_anchor():
    parsed = Parsed(render("- one\n- two\n\n^list-id\n\nAfter."))
    assert "list-id" not in parsed.text
    assert ("span", {"id": "block-list-id", "class": "block-anchor"}) in parsed.tags


def test_continuation_lines_belong_to_their_footnote():
    source = "Claim[^a] and another[^b].\n\n[^a]: First line\n  continued here\n[^b]: Second\n\nNot part of a note.\n"
    html = render(source)
    notes = html.split('<section class="footnotes">')[1]
    assert "continued here" in notes and "Not part of a note." not in notes
    body = html.split('<section class="footnotes">')[0]
    assert "Not part of a note." in body and "continued here" not in body


def test_inline_footnotes_and_undefined_references():
    parsed = Parsed(render("One^[an *inline* note] and [^missing] stays.\n"))
    assert "One[1] and [^missing] stays." in parsed.text
    assert ("em", {}) in parsed.tags


def test_code_and_escapes_stay_literal():
    source = ("Inline `[^a] ^abcd1234 <b>` and \\[^a] escaped.[^a]\n\n"
              "```md\n[^a] **not bold** ^abcd1234\n```\n\n"
              "    [^a] indented ^abcd1234\n\n"
              "- list\n\n  ```\n  [^a] in a list fence\n  ```\n\n"
              "[^a]: The note.\n")
    html = render(source)
    parsed = Parsed(html)
    assert "Inline [^a] ^abcd1234 <b> and [^a] escaped.[1]" in parsed.text
    assert "[^a] **not bold** ^abcd1234\n" in parsed.text
    assert "[^a] indented ^abcd1234\n" in parsed.text
    assert "[^a] in a list fence\n" in parsed.text
    assert html.count('class="footnote-ref"') == 2  # sup + link of the one real reference
    assert ("strong", {}) not in parsed.tags
    assert ("code", {"class": "language-md"}) in parsed.tags


def test_html_in_the_source_is_text_and_links_are_checked():
    source = ('<script>alert(1)</script> <img src=x onerror=alert(1)> <!-- c --> done\n\n'
              '[js](javascript:alert(1)) [data](data:text/html,x) [vb](VBScript:x) [ok](https://e.example/?a=1&b="2") '
              '[rel](../people/dave.md#^f888f60e) [tab](java\tscript:x) <https://auto.example/x>\n\n'
              '<!--\nhidden block\n-->\nvisible\n')
    html = render(source)
    parsed = Parsed(html)
    assert "<script" not in html and "<img" not in html and "onerror=" not in html.replace("onerror=alert", "")
    assert "<script>alert(1)</script>" in parsed.text  # shown, escaped
    assert "hidden block" not in parsed.text and "visible" in parsed.text
    assert set(parsed.hrefs()) == {'https://e.example/?a=1&b="2"', "../people/dave.md#^f888f60e",
                                   "https://auto.example/x"}
    assert "js" in parsed.text and "data" in parsed.text  # refused links keep their text
    external = [a for tag, a in parsed.tags if tag == "a" and a.get("href", "").startswith("https://")]
    assert all(a.get("rel") == "noopener noreferrer" for a in external)


def test_blocks_render():
    html = render("# Title\n\n## Sub\n\nPara **bold** *em* ~~gone~~ ==mark== snake_case_name.\nNext line.\n\n"
                  "- a\n- b\n  - nested\n\n3. three\n4. four\n\n> quoted\n\n---\n")
    assert "<h1>Title</h1><h2>Sub</h2>" in html
    assert "<strong>bold</strong> <em>em</em> <del>gone</del> <mark>mark</mark> snake_case_name.<br>Next line." in html
    assert "<ul><li>a</li><li>b<ul><li>nested</li></ul></li></ul>" in html
    assert '<ol start="3"><li>three</li><li>four</li></ol>' in html
    assert "<blockquote><p>quoted</p></blockquote><hr>" in html


def test_id_prefix_and_link_resolution_stay_sanitized():
    code = ("const md=require(process.argv[1]);"
            "const out=md.render('A[^x] [t](other.md#^abc)\\n\\n[^x]: n\\n',"
            "{idPrefix:'p-',resolveLink:(u)=>u.startsWith('other')?'javascript:alert(1)':u});"
            "process.stdout.write(out);")
    html = subprocess.run([NODE, "-e", code, str(RENDERER)], capture_output=True, text=True, check=True).stdout
    assert 'id="p-fnref-1"' in html and 'href="#p-fn-1"' in html and 'id="p-fn-1"' in html
    assert "javascript" not in html and "<span>t</span>" in html


def test_random_input_yields_only_our_tags():
    rng = random.Random(20260809)
    alphabet = ["[^a]", "[^b]: ", "^[", "]", "[", "](", ")", "(", "`", "```", "\\", "*", "_", "**", "~~", "==", "<",
                ">", "<script>", "</script>", '"', "'", "&", "javascript:", "http://x", "#", "- ", "1. ", "> ", "\n",
                "\n\n", "  ", "    ", "^abcd1234", " ^f888f60e", "<!--", "-->", "word", "\t", "![", "[[", "]]", "|"]
    sources = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(400)]
    for source, html in zip(sources, render_many(sources)):
        parsed = Parsed(html)
        assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS, source
        for tag, attrs in parsed.tags:
            assert not any(name.startswith("on") for name in attrs), source
        for href in parsed.hrefs():
            assert re.match(r"^(https?:|[^:/?#]*([/?#].*)?$)", href, re.I), (source, href)


def test_the_served_page_embeds_this_renderer():
    assert asset("markdown.js") == RENDERER.read_text(encoding="utf-8")


def _page_function(name: str) -> str:
    """The source of one top-level-indented function of the page script (``  function name(…) {…}``)."""
    page = (Path(__file__).resolve().parents[2] / "openprogram_memory" / "web" / "page.html").read_text()
    match = re.search(rf"\n  function {name}\(.*?\n  }}\n", page, re.S)
    assert match, name
    return match.group(0)


def test_page_links_a_footnote_source_to_the_evidence_view():
    """A footnote's `../sources/…md#source-…` link opens the cited message in the page, not a JSON 404."""
    code = "".join(_page_function(n) for n in ("encodePath", "normalizePath", "linkResolver")) + """
      const resolve = linkResolver("topics/people/dave.md");
      console.log(JSON.stringify([
        resolve("../../sources/openprogram/_v2/s1.md#source-8339b8d31a2b4c5d"),
        resolve("../work.md#^abcd1234"),
        resolve("https://example.com/x"),
      ]));"""
    done = subprocess.run([NODE, "-e", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [
        "#/source/openprogram/_v2/s1.md?anchor=source-8339b8d31a2b4c5d",
        "#/topics/topics/work.md?block=abcd1234",
        "https://example.com/x",
    ]
