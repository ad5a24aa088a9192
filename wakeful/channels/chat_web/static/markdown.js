// The model's Markdown as DOM nodes, for the chat's replies: paragraphs, emphasis, code,
// fenced code, lists, links, headings, block quotes, rules and tables.
// A reply may quote a stranger (a webhook, an e-mail), so none of it is ever HTML: every
// node is made with createElement, every piece of text goes in as a text node, and a
// link is kept only to an http, https or mailto URL (anything else stays its own text).
// One global, renderMarkdown(text, element); the rest stays in this closure.
"use strict";

const renderMarkdown = (() => {
  // Every pattern is anchored and has one way to match a line: a stranger's text must
  // not make a regular expression backtrack for seconds on each streamed chunk.
  const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t](.*))?$/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}> ?/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:([ \t]+)|$)/;
  const TABLE_RULE = /^:?-+:?$/;
  const BLANK = /^[ \t]*$/;
  const PUNCTUATION = /[!-/:-@[-`{-~]/;
  const WORD = /[\p{L}\p{N}]/u;
  const SPACE = /\s/;
  const BARE_URL = /https?:\/\/[^\s<>]+/y;
  const AUTOLINK = /<([a-zA-Z][a-zA-Z\d+.-]{1,31}:[^\s<>]*|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)>/y;
  const DESTINATION = /\(\s*((?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/y;
  const TRAILING = ".,:;!?\"'*_~]"; // a bare URL's last characters that are the sentence's
  const SCHEMES = new Set(["http:", "https:", "mailto:"]);
  // Deeper nesting than this is shown as text: a stranger's ">>>>…" or "*_*_…" must not
  // exhaust the stack (each level is a call).
  const MAX_DEPTH = 12;

  function node(tag, ...children) {
    const made = document.createElement(tag);
    made.append(...children); // strings become text nodes, never markup
    return made;
  }

  // --- blocks ----------------------------------------------------------------------

  function blocks(lines, parent, depth) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let match;
      if (BLANK.test(line)) i++;
      else if ((match = fenceOpens(line))) i = fence(lines, i, match, parent);
      else if ((match = HEADING.exec(line))) {
        // The page has its own h1 and h2: a reply's headings start at h3.
        parent.append(inline(headingText(match[2] || ""), node(`h${Math.min(match[1].length + 2, 6)}`), depth));
        i++;
      } else if (RULE.test(line)) {
        parent.append(node("hr"));
        i++;
      } else if (depth < MAX_DEPTH && QUOTE.test(line)) i = quote(lines, i, parent, depth);
      else if (depth < MAX_DEPTH && ITEM.test(line)) i = list(lines, i, parent, depth);
      else if (isTable(lines, i)) i = table(lines, i, parent, depth);
      else i = paragraph(lines, i, parent, depth);
    }
  }

  // A fence's info string: the language is its first word (after ``` it has no backtick).
  function fenceOpens(line) {
    const match = FENCE.exec(line);
    if (!match || (match[2][0] === "`" && match[3].includes("`"))) return null;
    return { indent: match[1].length, marks: match[2], language: match[3].trim().split(/\s/)[0] };
  }

  // "## Title ##": the closing hashes go (a loop, not a regex that backtracks on spaces).
  function headingText(text) {
    text = text.trimEnd();
    let end = text.length;
    while (end > 0 && text[end - 1] === "#") end--;
    return end === 0 || text[end - 1] === " " || text[end - 1] === "\t" ? text.slice(0, end).trim() : text.trim();
  }

  // Whether a line ends the paragraph before it (CommonMark: an ordered list does only
  // when it starts at 1, an empty item never).
  function interrupts(line) {
    if (fenceOpens(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)) return true;
    const item = ITEM.exec(line);
    return Boolean(item && item[3] && !BLANK.test(line.slice(item[0].length))
      && (!/\d/.test(item[2]) || parseInt(item[2], 10) === 1));
  }

  function paragraph(lines, i, parent, depth) {
    const text = [lines[i++].trim()];
    while (i < lines.length && !BLANK.test(lines[i]) && !interrupts(lines[i]) && !isTable(lines, i)) {
      text.push(lines[i++].trim());
    }
    parent.append(inline(text.join("\n"), node("p"), depth));
    return i;
  }

  // A fence left open runs to the end: a streamed reply's code block stays one while
  // its closing fence has not arrived yet.
  function fence(lines, i, { indent, marks, language }, parent) {
    const closing = new RegExp(`^ {0,3}${marks[0]}{${marks.length},}[ \\t]*$`);
    const outdent = new RegExp(`^ {0,${indent}}`); // the fence's own indent, off each line
    const body = [];
    for (i++; i < lines.length && !closing.test(lines[i]); i++) body.push(lines[i].replace(outdent, ""));
    const code = node("code", body.join("\n"));
    if (language) code.className = `language-${language.replace(/[^\w+#.-]/g, "")}`;
    parent.append(node("pre", code));
    return i + 1;
  }

  function quote(lines, i, parent, depth) {
    const inner = [];
    // A quote's paragraph may go on in lines without ">" (lazy continuation).
    while (i < lines.length && (QUOTE.test(lines[i])
      || (inner.length && !BLANK.test(inner[inner.length - 1]) && !BLANK.test(lines[i]) && !interrupts(lines[i])))) {
      inner.push(lines[i++].replace(QUOTE, ""));
    }
    const box = node("blockquote");
    blocks(inner, box, depth + 1);
    parent.append(box);
    return i;
  }

  function list(lines, i, parent, depth) {
    const first = ITEM.exec(lines[i]);
    const ordered = /\d/.test(first[2]);
    const kind = ordered ? first[2].slice(-1) : first[2];
    const box = node(ordered ? "ol" : "ul");
    if (ordered && parseInt(first[2], 10) !== 1) box.start = parseInt(first[2], 10);
    let tight = true;
    let match;
    while (i < lines.length && (match = ITEM.exec(lines[i])) && match[2].slice(ordered ? -1 : 0) === kind) {
      const gap = match[3] || " ";
      // Content starts after the marker and its spaces (only one, if it is code-indented).
      const indent = match[1].length + match[2].length + (gap.length > 4 ? 1 : gap.length);
      const item = [lines[i].slice(Math.min(indent, lines[i].length))];
      for (i++; i < lines.length; i++) {
        const line = lines[i];
        const lead = /^ */.exec(line)[0].length;
        if (BLANK.test(line)) item.push("");
        // Indented to the content, or a nested item indented past this one's marker
        // (models indent "1. a" / "  - b" by two).
        else if (lead >= indent || (lead > match[1].length && ITEM.test(line.slice(match[1].length)))) {
          item.push(line.slice(Math.min(lead, indent)));
        } else if (!BLANK.test(item[item.length - 1]) && !interrupts(line) && !ITEM.test(line)) {
          item.push(line.trim()); // a paragraph's lazy continuation
        } else break;
      }
      let blanks = 0;
      while (item.length > 1 && item[item.length - 1] === "") {
        item.pop();
        blanks++;
      }
      // Loose (paragraphs) when items, or the blocks in one, are apart by a blank line.
      if ((blanks && i < lines.length && ITEM.test(lines[i])) || item.includes("")) tight = false;
      const entry = node("li");
      blocks(item, entry, depth + 1);
      box.append(entry);
    }
    // A tight list's items are their text, not paragraphs with a paragraph's margins.
    if (tight) for (const p of box.querySelectorAll(":scope > li > p")) p.replaceWith(...p.childNodes);
    parent.append(box);
    return i;
  }

  function isTable(lines, i) {
    if (i + 1 >= lines.length || !lines[i].includes("|") || !lines[i + 1].includes("|")) return false;
    const rules = cells(lines[i + 1]);
    return rules.every((rule) => TABLE_RULE.test(rule)) && cells(lines[i]).length === rules.length;
  }

  function cells(line) {
    const trimmed = line.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "");
    return trimmed.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
  }

  function table(lines, i, parent, depth) {
    const aligns = cells(lines[i + 1]).map((rule) => (rule.endsWith(":") ? (rule.startsWith(":") ? "center" : "right") : ""));
    const row = (line, tag) => {
      const texts = cells(line);
      return node("tr", ...aligns.map((align, n) => {
        const cell = inline(texts[n] || "", node(tag), depth);
        if (align) cell.style.textAlign = align; // the CSSOM, which the page's CSP allows
        return cell;
      }));
    };
    const body = node("tbody");
    const head = node("thead", row(lines[i], "th"));
    for (i += 2; i < lines.length && lines[i].includes("|") && !BLANK.test(lines[i]); i++) body.append(row(lines[i], "td"));
    const box = node("div", node("table", head, body));
    box.className = "table"; // scrolls sideways on a phone rather than widening the page
    parent.append(box);
    return i;
  }

  // --- inline ----------------------------------------------------------------------

  function inline(text, parent, depth, inLink = false) {
    const scan = { text, noCloser: new Map(), brackets: brackets(text) };
    let plain = "";
    const put = (...nodes) => {
      if (plain) parent.append(plain);
      plain = "";
      parent.append(...nodes);
    };
    for (let i = 0; i < text.length;) {
      const c = text[i];
      let span;
      if (c === "\\" && text[i + 1] === "\n") {
        put(node("br"));
        i += 2;
      } else if (c === "\\" && PUNCTUATION.test(text[i + 1] || "")) {
        plain += text[i + 1];
        i += 2;
      } else if (c === "\n") {
        put(node("br")); // a reply's line breaks are meant: chat, not a wrapped document
        i++;
      } else if (c === "`" && (span = codeSpan(scan, i))) {
        put(node("code", span.body));
        i = span.end;
      } else if ("*_~".includes(c) && depth < MAX_DEPTH && (span = emphasis(scan, i))) {
        const inner = inline(span.inner, node(span.tag), depth + 1, inLink);
        put(span.outer ? node(span.outer, inner) : inner);
        i = span.end;
      } else if (!inLink && (c === "[" || (c === "!" && text[i + 1] === "[")) && (span = link(scan, i))) {
        const href = safeUrl(span.href);
        if (href) put(inline(span.label || span.href, anchor(href), depth + 1, true));
        else plain += text.slice(i, span.end);
        i = span.end;
      } else if (!inLink && c === "<" && (span = sticky(AUTOLINK, text, i))) {
        const target = span[1].includes(":") ? span[1] : `mailto:${span[1]}`;
        const href = safeUrl(target);
        if (href) put(anchor(href, span[1]));
        else plain += span[0];
        i += span[0].length;
      } else if (!inLink && c === "h" && !WORD.test(text[i - 1] || "") && (span = bareUrl(text, i))) {
        put(anchor(span, span));
        i += span.length;
      } else {
        plain += c;
        i++;
      }
    }
    put();
    return parent;
  }

  function anchor(href, ...children) {
    const a = node("a", ...children);
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    return a;
  }

  function safeUrl(raw) {
    let url;
    try {
      url = new URL(raw); // absolute only: a relative or protocol-relative URL throws
    } catch {
      return null;
    }
    return SCHEMES.has(url.protocol) ? url.href : null;
  }

  function sticky(pattern, text, i) {
    pattern.lastIndex = i;
    return pattern.exec(text);
  }

  function run(text, i) {
    let end = i;
    while (text[end] === text[i]) end++;
    return end - i;
  }

  function codeSpan(scan, i) {
    const { text, noCloser } = scan;
    const n = run(text, i);
    const key = `\`${n}`;
    if (noCloser.get(key) <= i) return null;
    for (let j = text.indexOf("`".repeat(n), i + n); j !== -1; j = text.indexOf("`".repeat(n), j)) {
      const m = run(text, j);
      if (m === n) {
        let body = text.slice(i + n, j).replace(/\n/g, " ");
        if (body.length > 2 && body[0] === " " && body.at(-1) === " " && body.trim()) body = body.slice(1, -1);
        return { body, end: j + n };
      }
      j += m;
    }
    noCloser.set(key, i); // none later either: each later backtick run stops at once
    return null;
  }

  // A run of * or _ (1 to 3) or ~~ that opens before a non-space and closes with the same
  // run after a non-space; _ not inside a word. Code spans inside are skipped, so a `*`
  // in code never closes emphasis.
  function emphasis(scan, i) {
    const { text, noCloser } = scan;
    const c = text[i];
    const n = run(text, i);
    if (c === "~" ? n !== 2 : n > 3) return null;
    if (SPACE.test(text[i + n] || " ") || (c === "_" && WORD.test(text[i - 1] || ""))) return null;
    const key = c + n;
    if (noCloser.get(key) <= i) return null;
    for (let j = i + n; j < text.length;) {
      const d = text[j];
      let span;
      if (d === "\\") j += 2;
      else if (d === "`" && (span = codeSpan(scan, j))) j = span.end;
      else if (d === c) {
        const m = run(text, j);
        if (m === n && j > i + n && !SPACE.test(text[j - 1]) && (c !== "_" || !WORD.test(text[j + m] || ""))) {
          const tag = c === "~" ? "del" : n === 1 ? "em" : "strong";
          return { inner: text.slice(i + n, j), end: j + m, tag, outer: n === 3 ? "em" : null };
        }
        j += m;
      } else j++;
    }
    noCloser.set(key, i);
    return null;
  }

  // Each "[" and its matching "]", found once for the whole text (escapes skipped).
  function brackets(text) {
    const match = new Map();
    const open = [];
    for (let i = 0; i < text.length; i++) {
      if (text[i] === "\\") i++;
      else if (text[i] === "[") open.push(i);
      else if (text[i] === "]" && open.length) match.set(open.pop(), i);
    }
    return match;
  }

  // [label](destination "title") and ![alt](destination): an image is shown as a link to
  // it, never loaded (a stranger's image would tell its server who reads the reply).
  function link(scan, i) {
    const { text } = scan;
    const start = text[i] === "!" ? i + 1 : i;
    const close = scan.brackets.get(start);
    if (close === undefined || text[close + 1] !== "(") return null;
    const rest = sticky(DESTINATION, text, close + 1);
    if (!rest || !rest[1]) return null;
    return { label: text.slice(start + 1, close), href: rest[1].replace(/\\(.)/g, "$1"), end: close + 1 + rest[0].length };
  }

  // A URL written bare (GFM's autolink): trailing punctuation is the sentence's, and a
  // closing parenthesis too unless the URL opened one.
  function bareUrl(text, i) {
    const found = sticky(BARE_URL, text, i);
    if (!found) return null;
    const url = found[0];
    let unclosed = url.split(")").length - url.split("(").length;
    let end = url.length;
    for (; ; end--) {
      if (TRAILING.includes(url[end - 1])) continue;
      if (url[end - 1] !== ")" || unclosed <= 0) break;
      unclosed--;
    }
    return safeUrl(url.slice(0, end)) ? url.slice(0, end) : null;
  }

  // The text's blocks, put in `element`. A block equal to the one already in its place
  // is kept: a streamed reply drawn again on each chunk lays out only what changed (most
  // of a draw's cost, bench/web_markdown.py), and keeps a selection and a code block's
  // sideways scroll in the blocks before.
  return (text, element) => {
    const fragment = document.createDocumentFragment();
    try {
      blocks(String(text ?? "").replace(/\r\n?/g, "\n").split("\n"), fragment, 0);
    } catch (error) {
      // Never a reply lost to a renderer bug: then it is shown as the text it is.
      console.error(error);
      fragment.replaceChildren(String(text ?? ""));
    }
    const fresh = [...fragment.childNodes];
    fresh.forEach((block, n) => {
      const old = element.childNodes[n];
      if (!old) element.append(block);
      else if (!old.isEqualNode(block)) old.replaceWith(block);
    });
    while (element.childNodes.length > fresh.length) element.lastChild.remove();
  };
})();
