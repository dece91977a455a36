// The model's thoughts as Markdown, as the TUI shows them: headings, paragraphs, lists,
// fenced code, `code`, **strong**, *emphasis* and [links](https://...). Safe by
// construction: it builds DOM nodes and sets only text (no HTML parsing at all, so no HTML from
// the model is ever parsed), and a link is made only for an http(s) address.
"use strict";

const Markdown = (() => {
  const INLINE = new RegExp([
    "`([^`\\n]+)`",                                  // 1 code
    "\\*\\*(.+?)\\*\\*", "__(.+?)__",                // 2, 3 strong
    "\\*([^*\\s](?:[^*]*?[^*\\s])?)\\*",             // 4 emphasis
    "(?<![\\p{L}\\p{N}_])_([^_\\s](?:[^_]*?[^_\\s])?)_(?![\\p{L}\\p{N}_])", // 5 emphasis
    "\\[([^\\]\\n]+)\\]\\(([^()\\s]+)\\)",           // 6, 7 link
  ].join("|"), "gu");

  function el(tag, children) {
    const node = document.createElement(tag);
    node.append(...children);
    return node;
  }

  function inline(text) {
    const out = [];
    let at = 0;
    for (const m of text.matchAll(INLINE)) {  // its own copy of the pattern: safe to recurse
      if (m.index > at) out.push(text.slice(at, m.index));
      at = m.index + m[0].length;
      if (m[1] !== undefined) out.push(el("code", [m[1]]));
      else if (m[2] !== undefined || m[3] !== undefined) out.push(el("strong", inline(m[2] ?? m[3])));
      else if (m[4] !== undefined || m[5] !== undefined) out.push(el("em", inline(m[4] ?? m[5])));
      else out.push(link(m[6], m[7]));
    }
    if (at < text.length) out.push(text.slice(at));
    return out;
  }

  function link(label, href) {
    let url = null;
    try { url = new URL(href); } catch { /* not an absolute address */ }
    if (!url || !["http:", "https:"].includes(url.protocol)) return `[${label}](${href})`;
    const a = el("a", inline(label));
    Object.assign(a, { href: url.href, target: "_blank", rel: "noopener noreferrer" });
    return a;
  }

  // Lines in, block elements out: a fence, a heading, a list (one kind at a time) or a
  // paragraph (its lines kept as lines, as the model wrote them).
  function render(source) {
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    const blocks = [];
    let paragraph = null;
    let list = null;
    let fence = null;
    const end = () => { paragraph = null; list = null; };
    for (const line of lines) {
      if (fence) {
        if (/^\s*```/.test(line)) fence = null;
        else fence.textContent += (fence.textContent ? "\n" : "") + line;
        continue;
      }
      if (/^\s*```/.test(line)) {
        end();
        fence = document.createElement("code");
        blocks.push(el("pre", [fence]));
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      const item = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/.exec(line);
      if (!line.trim()) {
        end();
      } else if (heading) {
        end();
        blocks.push(el(`h${Math.min(6, heading[1].length + 2)}`, inline(heading[2])));
      } else if (item) {
        const tag = item[1] ? "ul" : "ol";
        paragraph = null;
        if (!list || list.tagName.toLowerCase() !== tag) {
          list = document.createElement(tag);
          if (item[2] && item[2] !== "1") list.start = Number(item[2]);
          blocks.push(list);
        }
        list.append(el("li", inline(item[3])));
      } else if (list && /^\s+\S/.test(line)) {
        list.lastElementChild.append(" ", ...inline(line.trim()));  // a wrapped list item
      } else {
        list = null;
        if (paragraph) paragraph.append(document.createElement("br"), ...inline(line));
        else blocks.push(paragraph = el("p", inline(line)));
      }
    }
    return blocks;
  }

  return { render };
})();
