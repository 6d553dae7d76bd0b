// Text: lines as Chromium broke them, runs with their fonts, list markers and pseudo-element text.
// Part of slide_layout.js: included into its function, whose scope it shares (render/page_script.py).

// Lines come from the layout, so line feeds go; preserved spaces and tabs stay (a tab as spaces).
const PRESERVED = /^(pre|pre-wrap|break-spaces)$/;
const collapse = (text, s) =>
  PRESERVED.test(s.whiteSpace)
    ? text.replace(/[\n\r]/g, "").replace(/\t/g, " ".repeat(parseInt(s.tabSize, 10) || 8))
    : text.replace(/[ \t\n\r\f]+/g, " ");
const transform = (text, tt) => {
  if (tt === "uppercase") return text.toUpperCase();
  if (tt === "lowercase") return text.toLowerCase();
  if (tt === "capitalize") return text.replace(/(^|\s)(\S)/g, (m, a, b) => a + b.toUpperCase());
  return text;
};
const fonts = [];
const fontIndex = new Map();
const fontOf = (s) => {
  const key = `${s.fontFamily}|${s.fontWeight}|${s.fontStyle}`;
  if (!fontIndex.has(key)) {
    fontIndex.set(key, fonts.length);
    fonts.push({ family: s.fontFamily, weight: parseInt(s.fontWeight, 10) || 400, italic: s.fontStyle !== "normal" });
  }
  return fontIndex.get(key);
};
const runs = new Map();
const runOf = (el, s) => {
  if (!runs.has(el)) runs.set(el, { run: runStyle(el, s), asc: ascent(s) });
  return runs.get(el);
};
const runStyle = (el, s) => {
  const [c, a] = colour(s.webkitTextFillColor && s.webkitTextFillColor !== s.color ? s.webkitTextFillColor : s.color);
  const deco = s.textDecorationLine || "";
  const link = el.closest("a[href]");
  return {
    f: fontOf(s), s: px(s.fontSize), c, a: r2(a * opacity(el)), u: deco.includes("underline"), k: deco.includes("line-through"),
    ls: s.letterSpacing === "normal" ? 0 : px(s.letterSpacing), va: s.verticalAlign === "super" ? 1 : s.verticalAlign === "sub" ? -1 : 0,
    href: link ? link.href : null,
  };
};

// The fragments of one text node, split where Chromium broke its lines.
const charTop = (node, i) => {
  range.setStart(node, i);
  range.setEnd(node, i + 1);
  const rs = range.getClientRects();
  return rs.length ? rs[0].top : null;
};
const fragments = (node) => {
  range.selectNodeContents(node);
  const rects = [...range.getClientRects()].filter((r) => r.width > 0 || r.height > 0);
  if (rects.length <= 1) return rects.length ? [[0, node.data.length, rects[0]]] : [];
  const out = [];
  let start = 0;
  for (let k = 0; k < rects.length - 1; k++) {
    // the first offset whose glyph lies on a later line than rects[k] (lines may overlap)
    let lo = start, hi = node.data.length;
    const limit = (rects[k].top + rects[k + 1].top) / 2 + 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      let j = mid;
      while (j < node.data.length && /\s/.test(node.data[j])) j++;
      const top = j < node.data.length ? charTop(node, j) : Infinity;
      if (top === null || top < limit - 1) lo = mid + 1; else hi = mid;
    }
    out.push([start, lo, rects[k]]);
    start = lo;
  }
  out.push([start, node.data.length, rects[rects.length - 1]]);
  return out;
};

// Inline content of a block: text nodes reached through inline elements only; inline boxes painted.
const inlineText = (block, visit) => {
  const parts = [];
  const walk = (el) => {
    for (const child of el.childNodes) {
      if (child.nodeType === 3) {
        if (child.data.length) parts.push(child);
      } else if (child.nodeType === 1 && !SKIP.has(child.tagName)) {
        const s = style(child);
        if (s.display === "none") continue;
        if (INLINE.has(s.display) && !needsShot(child, s) && child.tagName !== "IMG") {
          paintInline(child, s);
          walk(child);
        } else visit(child);
      }
    }
  };
  walk(block);
  return parts;
};
// An inline element's background and bottom border (highlights, inline code), on each line it spans.
const paintInline = (el, s) => {
  const [c, a] = colour(s.backgroundColor);
  const bw = s.borderBottomStyle === "none" ? 0 : px(s.borderBottomWidth);
  if (a <= 0 && !bw) return;
  const under = side(s, "Bottom", el);
  for (const r of el.getClientRects()) {
    if (r.width <= 0) continue;
    if (a > 0) emit(el, { type: "box", rect: rect(r), fill: c, alpha: r2(a * opacity(el)), radius: px(s.borderTopLeftRadius) });
    if (bw) emit(el, { type: "box", rect: [r2(r.left), r2(r.bottom - bw), r2(r.width), bw], fill: under.color, alpha: under.alpha, radius: 0 });
  }
};
const side = (s, name, el) => {
  const [c, a] = colour(s[`border${name}Color`]);
  return { color: c, alpha: r2(a * opacity(el)), style: s[`border${name}Style`] };
};

const textBlock = (block, s, parts) => {
  const lines = [];
  let line = null;
  for (const node of parts) {
    const el = node.parentElement;
    const es = style(el);
    if (es.visibility !== "visible" || opacity(el) <= 0) continue;
    const { run, asc } = runOf(el, es);
    for (const [a, b, r] of fragments(node)) {
      const mid = (r.top + r.bottom) / 2;
      if (!line || mid > line.bottom) {
        line = { x: r.left, right: r.right, top: r.top, bottom: r.bottom, base: r.top + asc, runs: [], pre: PRESERVED.test(es.whiteSpace) };
        lines.push(line);
      }
      line.x = Math.min(line.x, r.left);
      line.right = Math.max(line.right, r.right);
      line.bottom = Math.max(line.bottom, r.bottom);
      if (run.va === 0) line.base = Math.max(line.base, r.top + asc);
      // Colour emoji: pictures over transparent text (office renderers may lack colour fonts).
      const raw = node.data.slice(a, b);
      for (const m of raw.matchAll(EMOJI)) {
        range.setStart(node, a + m.index);
        range.setEnd(node, a + m.index + m[0].length);
        const er = range.getBoundingClientRect();
        if (er.width > 0) emit(el, { ...shot(el, er, "whole"), alt: m[0] });
      }
      raw.split(EMOJI_SPLIT).forEach((piece, i) => {
        const last = line.runs[line.runs.length - 1];
        let t = transform(collapse(piece, es), es.textTransform);
        if (last && last.t.endsWith(" ") && t.startsWith(" ")) t = t.slice(1);
        if (!t) return;
        const drawn = i % 2 ? { ...run, a: 0 } : run;  // an emoji: transparent text under its picture
        if (last && JSON.stringify({ ...last, t: "" }) === JSON.stringify({ ...drawn, t: "" })) last.t += t;
        else line.runs.push({ ...drawn, t });
      });
    }
  }
  const out = [];
  for (const l of lines) {
    if (l.runs.length && !l.pre) {
      l.runs[0].t = l.runs[0].t.replace(/^ +/, "");
      const end = l.runs[l.runs.length - 1];
      end.t = end.t.replace(/ +$/, "");
    }
    l.runs = l.runs.filter((r) => r.t.length);
    if (!l.runs.some((r) => r.a > 0 && r.t.trim())) continue;
    const line = { x: r2(l.x), w: r2(l.right - l.x), top: r2(l.top), bottom: r2(l.bottom), base: r2(l.base), runs: l.runs };
    if (s.textAlign === "justify") Object.assign(line, stretch(line));
    out.push(line);
  }
  return out;
};
// How much Chromium widened a justified line: per space ("js"), or per character where the
// line has no spaces ("jc", CJK). The last line of a paragraph keeps its natural width.
const stretch = (line) => {
  let natural = 0;
  for (const run of line.runs) {
    const f = fonts[run.f];
    probe.font = `${f.italic ? "italic" : "normal"} ${f.weight} ${run.s}px ${f.family}`;
    natural += probe.measureText(run.t).width + run.ls * [...run.t].length;
  }
  const extra = line.w - natural;
  if (extra < 1 || extra > 0.3 * line.w) return {};
  const text = line.runs.map((r) => r.t).join("");
  const spaces = (text.match(/ /g) || []).length;
  return spaces ? { js: r2(extra / spaces) } : { jc: r2(extra / Math.max(1, [...text].length - 1)) };
};

const boxOf = (el) => {
  const r = el.getBoundingClientRect();
  const s = style(el);
  const bl = px(s.borderLeftWidth), bt = px(s.borderTopWidth), br = px(s.borderRightWidth), bb = px(s.borderBottomWidth);
  return {
    border: rect(r),
    content: [r2(r.left + bl + px(s.paddingLeft)), r2(r.top + bt + px(s.paddingTop)),
      r2(r.width - bl - br - px(s.paddingLeft) - px(s.paddingRight)), r2(r.height - bt - bb - px(s.paddingTop) - px(s.paddingBottom))],
  };
};

// The list marker of a list item: a bullet glyph, or a number PowerPoint counts itself.
const GLYPHS = { disc: "•", circle: "◦", square: "▪" };
const SCHEMES = { decimal: "arabicPeriod", "lower-alpha": "alphaLcPeriod", "lower-latin": "alphaLcPeriod", "upper-alpha": "alphaUcPeriod",
  "upper-latin": "alphaUcPeriod", "lower-roman": "romanLcPeriod", "upper-roman": "romanUcPeriod" };
// Where Chromium puts an outside marker: a symbol (disc, circle, square) ends 7 px plus two thirds
// of its font's ascent before the content box; text ("1. ") ends at it (ListMarker::
// InlineMarginsForOutside). The snapshot's box wins when there is one.
const marker = (el, s, index) => {
  const type = s.listStyleType;
  if (s.display !== "list-item" || type === "none") return null;
  const ms = getComputedStyle(el, "::marker");
  const [c, a] = colour(ms.color);
  const symbol = GLYPHS[type] || (type.startsWith('"') ? JSON.parse(type).trim() : null);
  const list = el.parentElement;
  let n = list && list.tagName === "OL" ? list.start : 1;
  for (let sib = el.previousElementSibling; sib; sib = sib.previousElementSibling) if (style(sib).display === "list-item") n++;
  if (el.getAttribute("value")) n = el.value;
  probe.font = `${ms.fontStyle} ${ms.fontWeight} ${ms.fontSize} ${ms.fontFamily}`;
  const left = boxOf(el).content[0];
  const box = pseudo[index] && pseudo[index].marker;
  const x = box ? box[0] : GLYPHS[type] ? left - (Math.floor((probe.measureText("x").fontBoundingBoxAscent * 2) / 3) + 8) : left - probe.measureText(symbol !== null ? `${symbol} ` : `${n}. `).width;
  const out = { x: r2(x), size: px(ms.fontSize), f: fontOf(ms), c, a: r2(a * opacity(el)) };
  return symbol !== null ? { ...out, char: symbol } : { ...out, scheme: SCHEMES[type] || "arabicPeriod", start: n };
};

const pseudoText = (el, which, box) => {
  const s = getComputedStyle(el, `::${which}`);
  const content = s.content;
  if (!content || !content.startsWith('"')) return null;
  let text;
  try { text = content.match(/"(?:[^"\\]|\\.)*"/g).map((q) => JSON.parse(q)).join(""); } catch (e) { return null; }
  text = transform(text.replace(/[ \t\n\r\f]+/g, " ").trim(), s.textTransform);
  if (!text || s.visibility !== "visible") return null;
  const [c, a] = colour(s.color);
  const lh = s.lineHeight === "normal" ? px(s.fontSize) * 1.2 : px(s.lineHeight);
  const bl = px(s.borderLeftWidth) + px(s.paddingLeft), bt = px(s.borderTopWidth) + px(s.paddingTop);
  const inner = [box[0] + bl, box[1] + bt, box[2] - bl - px(s.borderRightWidth) - px(s.paddingRight), box[3] - bt - px(s.borderBottomWidth) - px(s.paddingBottom)];
  probe.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  const m = probe.measureText(text);
  const top = inner[1] + (Math.min(lh, inner[3] > 0 ? inner[3] : lh) - (m.fontBoundingBoxAscent + m.fontBoundingBoxDescent)) / 2;
  const align = s.textAlign === "center" ? "ctr" : s.textAlign === "right" || s.textAlign === "end" ? "r" : "l";
  const x = align === "ctr" ? inner[0] + (inner[2] - m.width) / 2 : align === "r" ? inner[0] + inner[2] - m.width : inner[0];
  const run = { f: fontOf(s), s: px(s.fontSize), c, a: r2(a * opacity(el)), u: false, k: false, ls: s.letterSpacing === "normal" ? 0 : px(s.letterSpacing), va: 0, href: null, t: text };
  return { x: r2(x), w: r2(m.width), top: r2(top), bottom: r2(top + m.fontBoundingBoxAscent + m.fontBoundingBoxDescent), base: r2(top + m.fontBoundingBoxAscent), runs: [run] };
};
