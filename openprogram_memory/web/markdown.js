/*
 * Memory Markdown preview: a small renderer for the Markdown topic files use
 * (Obsidian-flavoured), with ONE sanitizer.
 *
 * The parser never writes HTML. It builds a tree of {tag, attrs, children}
 * and {text} nodes; toHtml() is the only place HTML is produced: it escapes
 * every text and attribute value, emits only the tags and attributes in
 * ALLOWED, and lets a link through only when its target is http(s) or
 * relative. Whatever a topic contains, the output holds only our own tags.
 *
 * Reading view rules (design §09):
 *  - named footnotes [^label] and inline footnotes ^[text] become numbered
 *    superscripts [1], [2]… in order of first use; definitions "[^x]: …"
 *    (with two-space continuation lines) are collected into an ordered list
 *    at the end; an undefined [^x] stays literal text;
 *  - block IDs (" ^abcd1234" ending a paragraph, or alone on a line) leave
 *    only an invisible anchor; evidence labels never reach the reading text;
 *  - code spans, fenced and indented code are literal; "\[^x]" stays "[^x]";
 *  - HTML in the source is shown as text, except comments, which are hidden.
 *
 * Works in the browser (window.MemoryMarkdown) and in node (module.exports).
 */
(function (root) {
  "use strict";

  // ---------------------------------------------------------------- sanitizer
  var ALLOWED = {
    p: [], h1: [], h2: [], h3: [], h4: [], h5: [], h6: [], hr: [], br: [],
    ul: [], ol: ["start"], li: ["id"], blockquote: [], pre: [], code: ["class"],
    strong: [], em: [], del: [], mark: [], sup: ["id", "class"], span: ["id", "class"],
    section: ["class"], a: ["href", "id", "class", "title"]
  };
  var VOID = { hr: true, br: true };
  var ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

  function escapeHtml(value) {
    return String(value).replace(/[&<>"']/g, function (c) { return ENTITIES[c]; });
  }

  /** The href to emit, or null: only http(s), and relative or fragment targets. */
  function safeHref(url) {
    var value = String(url == null ? "" : url).trim();
    if (!value || /[\u0000-\u0020\u007f-\u009f]/.test(value)) return null;
    // a colon before the first "/", "?" or "#" makes a scheme (or a malformed one): only http(s) pass
    var colon = value.indexOf(":");
    var delim = value.search(/[\/?#]/);
    if (colon >= 0 && (delim < 0 || colon < delim)) return /^https?:/i.test(value) ? value : null;
    return value;
  }

  function isExternal(href) { return /^(https?:)?\/\//i.test(href); }

  function el(tag, attrs, children) { return { tag: tag, attrs: attrs || {}, children: children || [] }; }
  function txt(value) { return { text: String(value) }; }

  /** The one place HTML is produced. */
  function toHtml(node) {
    if (Array.isArray(node)) return node.map(toHtml).join("");
    if (node == null) return "";
    if (Object.prototype.hasOwnProperty.call(node, "text")) return escapeHtml(node.text);
    var allowed = ALLOWED[node.tag];
    if (!allowed) return toHtml(node.children || []); // unknown tag: keep the text only
    var out = "<" + node.tag;
    var attrs = node.attrs || {};
    for (var i = 0; i < allowed.length; i++) {
      var name = allowed[i];
      if (attrs[name] == null) continue;
      var value = String(attrs[name]);
      if (name === "href") {
        value = safeHref(value);
        if (value == null) continue;
      } else if (name === "id" || name === "class") {
        value = value.replace(/[^A-Za-z0-9_\- ]/g, "");
      } else if (name === "start") {
        value = String(parseInt(value, 10) || 1);
      }
      out += " " + name + '="' + escapeHtml(value) + '"';
    }
    if (node.tag === "a" && attrs.href != null && safeHref(attrs.href) != null && isExternal(attrs.href)) {
      out += ' rel="noopener noreferrer" target="_blank"';
    }
    if (VOID[node.tag]) return out + ">";
    return out + ">" + toHtml(node.children || []) + "</" + node.tag + ">";
  }

  // ----------------------------------------------------------- block grammar
  var FENCE_RE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
  var HEADING_RE = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  var HR_RE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  var LIST_RE = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)/;
  var QUOTE_RE = /^ {0,3}> ?/;
  var DEF_RE = /^ {0,3}\[\^([^\]\s]+)\]:[ \t]?(.*)$/;
  var BLOCK_ID_LINE_RE = /^ {0,3}\^([A-Za-z0-9-]+)[ \t]*$/;
  var TRAILING_IDS_RE = /(?:[ \t]*\n[ \t]*|[ \t]+)((?:\^[A-Za-z0-9-]+[ \t]*)+)$/;
  var ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

  function indentOf(line) {
    var m = /^ */.exec(line);
    return m[0].length;
  }
  function isBlank(line) { return !/\S/.test(line); }
  function expandTabs(line) {
    return line.replace(/^[ \t]+/, function (lead) {
      var col = 0, out = "";
      for (var i = 0; i < lead.length; i++) {
        if (lead[i] === "\t") { var add = 4 - (col % 4); out += " ".repeat(add); col += add; }
        else { out += " "; col += 1; }
      }
      return out;
    });
  }
  function dedent(line, amount) {
    var n = Math.min(amount, indentOf(line));
    return line.slice(n);
  }

  /** Split footnote definitions out of the body (never inside fenced code). */
  function extractDefinitions(lines, defs) {
    var body = [];
    var fence = null;
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      if (fence) {
        body.push(line);
        if (closesFence(line, fence)) fence = null;
        continue;
      }
      var f = FENCE_RE.exec(line);
      if (f && !(f[2][0] === "`" && f[3].indexOf("`") >= 0)) {
        fence = f[2];
        body.push(line);
        continue;
      }
      var d = DEF_RE.exec(line);
      if (!d) { body.push(line); continue; }
      var content = [d[2]];
      var j = i + 1;
      while (j < lines.length) {
        if (!isBlank(lines[j]) && indentOf(lines[j]) >= 2) { content.push(dedent(lines[j], 4)); j++; continue; }
        if (isBlank(lines[j])) {
          var k = j;
          while (k < lines.length && isBlank(lines[k])) k++;
          if (k < lines.length && indentOf(lines[k]) >= 2) {
            for (; j < k; j++) content.push("");
            continue;
          }
        }
        break;
      }
      if (!Object.prototype.hasOwnProperty.call(defs, d[1])) defs[d[1]] = content; // first definition wins
      i = j - 1;
    }
    return body;
  }

  function closesFence(line, fence) {
    var m = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
    return !!m && m[1][0] === fence[0] && m[1].length >= fence.length;
  }

  function startsBlock(line) {
    if (FENCE_RE.test(line) || HEADING_RE.test(line) || HR_RE.test(line) || QUOTE_RE.test(line)) return true;
    if (/^ {0,3}<!--/.test(line)) return true;
    var m = LIST_RE.exec(line);
    // like CommonMark: only a non-empty bullet or "1." item interrupts a paragraph
    return !!m && !!m[3] && (!/\d/.test(m[2]) || /^1[.)]$/.test(m[2]));
  }

  function parseBlocks(lines, ctx) {
    var out = [];
    var i = 0;
    var n = lines.length;
    while (i < n) {
      var line = lines[i];
      if (isBlank(line)) { i++; continue; }
      var m;
      if ((m = FENCE_RE.exec(line)) && !(m[2][0] === "`" && m[3].indexOf("`") >= 0)) {
        var fence = m[2], pad = m[1].length, info = m[3].trim().split(/\s+/)[0] || "";
        var code = [];
        i++;
        while (i < n && !closesFence(lines[i], fence)) { code.push(dedent(lines[i], pad)); i++; }
        i++; // the closing fence (or the end)
        out.push(codeBlock(code, info));
        continue;
      }
      if (indentOf(line) >= 4) {
        var block = [];
        while (i < n && (indentOf(lines[i]) >= 4 || isBlank(lines[i]))) { block.push(dedent(lines[i], 4)); i++; }
        while (block.length && isBlank(block[block.length - 1])) block.pop();
        out.push(codeBlock(block, ""));
        continue;
      }
      if (/^ {0,3}<!--/.test(line)) { // comments are not reading text
        while (i < n && lines[i].indexOf("-->") < 0) i++;
        i++;
        continue;
      }
      if ((m = HEADING_RE.exec(line))) {
        out.push(el("h" + m[1].length, {}, inline(m[2] || "", ctx)));
        i++;
        continue;
      }
      if (HR_RE.test(line)) { out.push(el("hr")); i++; continue; }
      if ((m = BLOCK_ID_LINE_RE.exec(line))) { out.push(blockAnchors([m[1]], ctx)); i++; continue; }
      if (QUOTE_RE.test(line)) {
        var quoted = [];
        while (i < n && !isBlank(lines[i]) && (QUOTE_RE.test(lines[i]) || !startsBlock(lines[i]))) {
          quoted.push(lines[i].replace(QUOTE_RE, ""));
          i++;
        }
        out.push(el("blockquote", {}, parseBlocks(quoted, ctx)));
        continue;
      }
      if (LIST_RE.test(line)) { i = parseList(lines, i, ctx, out); continue; }
      var para = [line];
      i++;
      while (i < n && !isBlank(lines[i]) && !startsBlock(lines[i])) { para.push(lines[i]); i++; }
      out.push(paragraph(para.map(function (l) { return l.replace(/^ +/, ""); }).join("\n"), ctx));
    }
    return out;
  }

  function codeBlock(lines, info) {
    var attrs = info ? { "class": "language-" + info } : {};
    return el("pre", {}, [el("code", attrs, [txt(lines.join("\n") + (lines.length ? "\n" : ""))])]);
  }

  function blockAnchors(ids, ctx) {
    return el("span", { "class": "block-anchor" }, ids.map(function (id) {
      return el("span", { id: ctx.prefix + "block-" + id, "class": "block-anchor" });
    }));
  }

  /** A paragraph; its trailing block IDs become invisible anchors. */
  function paragraph(text, ctx) {
    var ids = [];
    var m = TRAILING_IDS_RE.exec(text);
    if (m && m.index > 0) {
      ids = m[1].trim().split(/[ \t]+/).map(function (t) { return t.slice(1); });
      text = text.slice(0, m.index);
    }
    var children = inline(text, ctx);
    if (ids.length) children.push(blockAnchors(ids, ctx));
    return el("p", {}, children);
  }

  function parseList(lines, i, ctx, out) {
    var first = LIST_RE.exec(lines[i]);
    var ordered = /\d/.test(first[2]);
    var kind = ordered ? first[2].slice(-1) : first[2];
    var items = [];
    var loose = false;
    var n = lines.length;
    while (i < n) {
      var m = LIST_RE.exec(lines[i]);
      if (!m || /\d/.test(m[2]) !== ordered || (ordered ? m[2].slice(-1) : m[2]) !== kind) break;
      var markerEnd = m[1].length + m[2].length;
      var spaces = m[3].length;
      var offset = markerEnd + (spaces === 0 || spaces > 4 ? 1 : spaces);
      var itemLines = [lines[i].slice(Math.min(offset, lines[i].length))];
      i++;
      while (i < n) {
        var line = lines[i];
        if (isBlank(line)) {
          var k = i;
          while (k < n && isBlank(lines[k])) k++;
          if (k < n && indentOf(lines[k]) >= offset) {
            for (; i < k; i++) itemLines.push("");
            loose = true;
            continue;
          }
          break;
        }
        if (indentOf(line) >= offset) { itemLines.push(line.slice(offset)); i++; continue; }
        if (LIST_RE.test(line) || startsBlock(line)) break;
        itemLines.push(line.trim()); // lazy continuation of the item's paragraph
        i++;
      }
      items.push(itemLines);
      var next = i;
      while (next < n && isBlank(lines[next])) next++;
      if (next > i && next < n) {
        var sibling = LIST_RE.exec(lines[next]);
        if (sibling && /\d/.test(sibling[2]) === ordered && indentOf(lines[next]) < offset) { loose = true; i = next; }
      }
    }
    var lis = items.map(function (itemLines) {
      var blocks = parseBlocks(itemLines, ctx);
      if (!loose) {
        blocks = [].concat.apply([], blocks.map(function (b) { return b.tag === "p" ? b.children : [b]; }));
      }
      return el("li", {}, blocks);
    });
    var attrs = {};
    if (ordered && parseInt(first[2], 10) !== 1) attrs.start = parseInt(first[2], 10);
    out.push(el(ordered ? "ol" : "ul", attrs, lis));
    return i;
  }

  // --------------------------------------------------------------- inlines
  function codeSpanEnd(src, i) {
    // src[i] starts a backtick run; the index just past its closing run, or -1
    var run = 0;
    while (src[i + run] === "`") run++;
    var j = i + run;
    while (j < src.length) {
      if (src[j] !== "`") { j++; continue; }
      var close = 0;
      while (src[j + close] === "`") close++;
      if (close === run) return j + close;
      j += close;
    }
    return -1;
  }

  /** Index of the bracket closing the one at ``open``, skipping code and escapes. */
  function closingBracket(src, open) {
    var depth = 0;
    for (var j = open; j < src.length; j++) {
      var c = src[j];
      if (c === "\\") { j++; continue; }
      if (c === "`") {
        var end = codeSpanEnd(src, j);
        if (end > 0) { j = end - 1; continue; }
        while (src[j + 1] === "`") j++;
        continue;
      }
      if (c === "[") depth++;
      else if (c === "]") { depth--; if (depth === 0) return j; }
    }
    return -1;
  }

  /** Index of a closing emphasis delimiter ``delim`` after ``from``, or -1. */
  function closingDelimiter(src, from, delim) {
    for (var j = from; j < src.length; j++) {
      var c = src[j];
      if (c === "\\") { j++; continue; }
      if (c === "`") {
        var end = codeSpanEnd(src, j);
        if (end > 0) { j = end - 1; continue; }
        while (src[j + 1] === "`") j++;
        continue;
      }
      if (src.startsWith(delim, j)) {
        var run = 0;
        while (src[j + run] === delim[0]) run++;
        var before = src[j - 1];
        var fits = delim.length === 1 ? run % 2 === 1 : run >= delim.length;
        if (fits && j > from && !/\s/.test(before)) {
          if (delim[0] === "_" && /[A-Za-z0-9]/.test(src[j + run] || "")) { j += run - 1; continue; }
          return delim.length === 1 ? j + run - 1 : j;
        }
        j += run - 1;
      }
    }
    return -1;
  }

  /** ``[text](url)`` at ``i`` → {label, url, end} or null. */
  function parseLink(src, i) {
    var close = closingBracket(src, i);
    if (close < 0 || src[close + 1] !== "(") return null;
    var j = close + 2;
    while (src[j] === " ") j++;
    var url = "";
    if (src[j] === "<") {
      var gt = src.indexOf(">", j);
      if (gt < 0) return null;
      url = src.slice(j + 1, gt);
      j = gt + 1;
    } else {
      var depth = 0;
      while (j < src.length && !/\s/.test(src[j])) {
        if (src[j] === "\\" && j + 1 < src.length) { url += src[j + 1]; j += 2; continue; }
        if (src[j] === "(") depth++;
        if (src[j] === ")") { if (depth === 0) break; depth--; }
        url += src[j];
        j++;
      }
    }
    while (src[j] === " ") j++;
    var title = /^(?:"[^"]*"|'[^']*')/.exec(src.slice(j));
    if (title) { j += title[0].length; while (src[j] === " ") j++; }
    if (src[j] !== ")") return null;
    return { label: src.slice(i + 1, close), url: url, end: j + 1 };
  }

  function footnoteRef(ctx, key, content) {
    var note = key != null ? ctx.byLabel[key] : null;
    if (!note) {
      note = { n: ctx.notes.length + 1, content: content, refs: 0 };
      ctx.notes.push(note);
      if (key != null) ctx.byLabel[key] = note;
    }
    note.refs++;
    var id = ctx.prefix + "fnref-" + note.n + (note.refs > 1 ? "-" + note.refs : "");
    return el("sup", { "class": "footnote-ref", id: id }, [
      el("a", { href: "#" + ctx.prefix + "fn-" + note.n, "class": "footnote-ref" }, [txt("[" + note.n + "]")])
    ]);
  }

  function inline(src, ctx) {
    var out = [];
    var buf = "";
    function flush() { if (buf) { out.push(txt(buf)); buf = ""; } }
    var i = 0;
    var n = src.length;
    while (i < n) {
      var c = src[i];
      var rest;
      var m;
      if (c === "\\" && i + 1 < n && ASCII_PUNCT.indexOf(src[i + 1]) >= 0) { buf += src[i + 1]; i += 2; continue; }
      if (c === "\\" && src[i + 1] === "\n") { flush(); out.push(el("br")); i += 2; continue; }
      if (c === "`") {
        var end = codeSpanEnd(src, i);
        var run = 0;
        while (src[i + run] === "`") run++;
        if (end < 0) { buf += src.slice(i, i + run); i += run; continue; }
        var code = src.slice(i + run, end - run).replace(/\n/g, " ");
        if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
        flush();
        out.push(el("code", {}, [txt(code)]));
        i = end;
        continue;
      }
      if (c === "\n") { flush(); out.push(el("br")); i++; continue; }
      rest = src.slice(i);
      if (c === "[" && src[i + 1] === "^" && (m = /^\[\^([^\]\s]+)\]/.exec(rest))) {
        if (Object.prototype.hasOwnProperty.call(ctx.defs, m[1])) {
          flush();
          out.push(footnoteRef(ctx, m[1], ctx.defs[m[1]]));
        } else {
          buf += m[0]; // undefined: literal, predictably
        }
        i += m[0].length;
        continue;
      }
      if (c === "^" && src[i + 1] === "[") {
        var close = closingBracket(src, i + 1);
        if (close > i + 2) {
          flush();
          out.push(footnoteRef(ctx, null, [src.slice(i + 2, close)]));
          i = close + 1;
          continue;
        }
      }
      if (c === "[" && src[i + 1] === "[" && (m = /^\[\[([^\]|\n]+)(?:\|([^\]\n]+))?\]\]/.exec(rest))) {
        flush();
        out.push(el("span", { "class": "wikilink" }, [txt(m[2] || m[1])]));
        i += m[0].length;
        continue;
      }
      if ((c === "[" || (c === "!" && src[i + 1] === "[")) && !ctx.inLink) {
        var link = parseLink(src, c === "!" ? i + 1 : i);
        if (link) {
          flush();
          var label = inline(link.label, Object.assign({}, ctx, { inLink: true }));
          var href = ctx.resolveLink ? ctx.resolveLink(link.url) : link.url;
          out.push(href != null && safeHref(href) != null ? el("a", { href: href }, label) : el("span", {}, label));
          i = link.end;
          continue;
        }
      }
      if (c === "<" && !ctx.inLink && (m = /^<(https?:\/\/[^\s<>]+)>/i.exec(rest))) {
        flush();
        out.push(el("a", { href: m[1] }, [txt(m[1])]));
        i += m[0].length;
        continue;
      }
      if ((c === "h" || c === "H") && !ctx.inLink && !/[A-Za-z0-9]/.test(src[i - 1] || "") &&
          (m = /^https?:\/\/[^\s<]*[^\s<.,:;"')\]]/i.exec(rest))) {
        flush();
        out.push(el("a", { href: m[0] }, [txt(m[0])]));
        i += m[0].length;
        continue;
      }
      if (c === "*" || c === "_" || c === "~" || c === "=") {
        var node = emphasis(src, i, ctx);
        if (node) { flush(); out.push(node.node); i = node.end; continue; }
      }
      buf += c;
      i++;
    }
    flush();
    return out;
  }

  function emphasis(src, i, ctx) {
    var c = src[i];
    var double = src[i + 1] === c;
    if (c === "_" && /[A-Za-z0-9]/.test(src[i - 1] || "")) return null; // snake_case stays text
    var forms = c === "~" ? [["~~", "del"]] : c === "=" ? [["==", "mark"]] : [[c + c, "strong"], [c, "em"]];
    for (var f = 0; f < forms.length; f++) {
      var delim = forms[f][0];
      if (delim.length === 2 && !double) continue;
      var start = i + delim.length;
      if (start >= src.length || /\s/.test(src[start])) continue;
      var close = closingDelimiter(src, start, delim);
      if (close < 0) continue;
      return { node: el(forms[f][1], {}, inline(src.slice(start, close), ctx)), end: close + delim.length };
    }
    return null;
  }

  // ------------------------------------------------------------------ render
  /**
   * Render Markdown to a node tree. opts.idPrefix keeps anchor ids unique on
   * a page; opts.resolveLink(url) may rewrite a link target (its result is
   * still checked by the sanitizer).
   */
  function renderTree(source, opts) {
    opts = opts || {};
    var lines = String(source == null ? "" : source).replace(/\r\n?/g, "\n").split("\n").map(expandTabs);
    var ctx = {
      defs: {}, notes: [], byLabel: {}, inLink: false,
      prefix: opts.idPrefix || "", resolveLink: opts.resolveLink || null
    };
    var body = parseBlocks(extractDefinitions(lines, ctx.defs), ctx);
    if (ctx.notes.length) {
      var items = [];
      for (var k = 0; k < ctx.notes.length; k++) { // a note may cite further notes: they join the end
        var note = ctx.notes[k];
        var blocks = parseBlocks(note.content, ctx);
        var back = el("a", { href: "#" + ctx.prefix + "fnref-" + note.n, "class": "footnote-backref", title: "Back to text" },
          [txt("\u21a9\ufe0e")]);
        if (blocks.length && blocks[blocks.length - 1].tag === "p") {
          blocks[blocks.length - 1].children.push(txt(" "), back);
        } else {
          blocks.push(el("p", {}, [back]));
        }
        items.push(el("li", { id: ctx.prefix + "fn-" + note.n }, blocks));
      }
      body.push(el("section", { "class": "footnotes" }, [el("hr"), el("ol", {}, items)]));
    }
    return body;
  }

  function render(source, opts) { return toHtml(renderTree(source, opts)); }

  var api = { render: render, renderTree: renderTree, toHtml: toHtml, escapeHtml: escapeHtml, safeHref: safeHref };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.MemoryMarkdown = api;
})(typeof window !== "undefined" ? window : this);
