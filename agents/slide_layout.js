// In-page reading of a rendered slide for the editable PPTX (agents/slide_layout.py evaluates it).
// Returns a JSON string: what Chromium laid out, in paint order, in CSS px of the slide:
//   boxes (fills, linear gradients, borders, rounded corners, shadows), images (<img> and CSS
//   background images with the part of the file that shows), text blocks (lines as Chromium broke
//   them, runs with their fonts, sizes, weights, colours, baselines), tables (cells with their text),
//   and "shots": elements PowerPoint has no equivalent for (SVG, canvas, filters, transforms),
//   to be captured as pictures by the caller.
// `pseudo` maps an element's index in document order to the boxes of its ::before / ::after /
// ::marker (read over CDP, which alone knows them); null: the page is asked first whether it has
// any ::before / ::after, and answers {"needs": "pseudo"} when it does.
async ({ width, height, pseudo }) => {
  await document.fonts.ready;
  window.scrollTo(0, 0);
  const html = document.documentElement;
  const body = document.body || html;
  const all = [...document.querySelectorAll("*")];
  if (pseudo === null) {
    // ::before and ::after boxes come from a DOM snapshot: ask for one only when a page has them.
    const has = (el, which) => { const c = getComputedStyle(el, which).content; return c !== "none" && c !== "normal"; };
    if (all.some((el) => has(el, "::before") || has(el, "::after"))) return JSON.stringify({ needs: "pseudo" });
    pseudo = {};
  }
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "TITLE", "META", "LINK", "BR", "WBR"]);
  const SHOT_TAGS = new Set(["svg", "CANVAS", "VIDEO", "IFRAME", "OBJECT", "EMBED", "MATH"]);
  const INLINE = new Set(["inline", "contents"]);
  // What Chromium draws from the colour emoji font: emoji-presentation characters and sequences.
  const EMOJI_SRC = "(?:\\p{Regional_Indicator}{2}|(?:\\p{Emoji_Presentation}|\\p{Extended_Pictographic}\\uFE0F)(?:\\p{Emoji_Modifier}|\\uFE0F|\\u200D\\p{Extended_Pictographic}\\uFE0F?)*)";
  const EMOJI = new RegExp(EMOJI_SRC, "gu");
  const EMOJI_SPLIT = new RegExp(`(${EMOJI_SRC})`, "u");
  const r2 = (v) => Math.round(v * 100) / 100;
  const rect = (r) => [r2(r.left), r2(r.top), r2(r.width), r2(r.height)];

  // Computed styles, each property read once per element (a read costs microseconds).
  const styles = new Map();
  const style = (el) => {
    let s = styles.get(el);
    if (!s) {
      const computed = getComputedStyle(el);
      s = new Proxy({}, { get: (memo, prop) => (prop in memo ? memo[prop] : (memo[prop] = computed[prop])) });
      styles.set(el, s);
    }
    return s;
  };
  const px = (v) => parseFloat(v) || 0;

  // Colours as [hex, alpha]; anything that is not rgb()/rgba() goes through a 1x1 canvas.
  const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  const colours = new Map();
  const colour = (value) => {
    if (colours.has(value)) return colours.get(value);
    let rgba;
    const m = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(value);
    if (m) rgba = [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : +m[4]];
    else {
      probe.clearRect(0, 0, 1, 1);
      probe.fillStyle = "rgba(0,0,0,0)";
      probe.fillStyle = value;
      probe.fillRect(0, 0, 1, 1);
      const d = probe.getImageData(0, 0, 1, 1).data;
      rgba = d[3] ? [d[0] * 255 / d[3], d[1] * 255 / d[3], d[2] * 255 / d[3], d[3] / 255] : [0, 0, 0, 0];
    }
    const hex = rgba.slice(0, 3).map((c) => Math.round(Math.min(255, c)).toString(16).padStart(2, "0")).join("");
    const out = [hex, r2(rgba[3])];
    colours.set(value, out);
    return out;
  };

  // The font's rounded ascent, as Chromium lays text out with it (canvas reports the same metrics).
  const ascents = new Map();
  const ascent = (s) => {
    const key = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    if (!ascents.has(key)) {
      probe.font = key;
      ascents.set(key, probe.measureText("x").fontBoundingBoxAscent);
    }
    return ascents.get(key);
  };

  const names = new Map();
  const nameOf = (el) => {
    if (!names.has(el)) {
      const tag = el.tagName.toLowerCase();
      names.set(el, el.id ? `${tag}#${el.id}` : el.classList.length ? `${tag}.${el.classList[0]}` : tag);
    }
    return names.get(el);
  };

  // Paint order, as CSS stacks it (roughly): inside each positioned ancestor's layer, in-flow
  // content first, then positioned descendants by z-index, each group in document order.
  const order = new Map();
  const keys = new Map();
  const place = (el) => {
    if (!order.has(el)) order.set(el, order.size);
    return order.get(el);
  };
  const stackKey = (el) => {
    if (keys.has(el)) return keys.get(el);
    const parent = el.parentElement;
    let layer = [];
    for (let a = parent; a; a = a.parentElement) {
      if (style(a).position !== "static") { layer = stackKey(a); break; }
    }
    const s = style(el);
    const key = s.position !== "static" ? [...layer, s.zIndex === "auto" ? 0 : parseInt(s.zIndex, 10) || 0, 1, place(el)] : null;
    keys.set(el, key || layer);
    return keys.get(el);
  };
  const items = [];
  const shots = [];
  const emit = (el, item) => {
    item.key = [...stackKey(el), 0, 0, place(el), items.length];
    item.name = item.name || nameOf(el);
    items.push(item);
    return item;
  };

  const opacities = new Map();
  const opacity = (el) => {
    if (!el || el.nodeType !== 1) return 1;
    if (!opacities.has(el)) opacities.set(el, parseFloat(style(el).opacity) * opacity(el.parentElement));
    return opacities.get(el);
  };

  const isIdentity = (t) => t === "none" || /^matrix\(1, 0, 0, 1, [-\d.e]+, [-\d.e]+\)$/.test(t);
  const needsShot = (el, s) =>
    SHOT_TAGS.has(el.tagName) || !isIdentity(s.transform) || s.filter !== "none" || s.clipPath !== "none" ||
    (s.maskImage && s.maskImage !== "none") || s.mixBlendMode !== "normal" ||
    (s.backdropFilter && s.backdropFilter !== "none");

  const altOf = (el) => {
    const label = el.getAttribute("aria-label") || el.getAttribute("alt") || el.getAttribute("title");
    if (label) return label.trim();
    const title = el.querySelector && el.querySelector("title, desc");
    if (title && title.textContent.trim()) return title.textContent.trim();
    const figure = el.closest && el.closest("figure");
    const caption = figure && figure.querySelector("figcaption");
    if (caption && caption.textContent.trim()) return caption.textContent.trim();
    return "";
  };

  // ---- text ----
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
  const range = document.createRange();
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
          const style = i % 2 ? { ...run, a: 0 } : run;
          if (last && JSON.stringify({ ...last, t: "" }) === JSON.stringify({ ...style, t: "" })) last.t += t;
          else line.runs.push({ ...style, t });
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

  // ---- boxes ----
  const gradient = (value) => {
    const m = /^linear-gradient\((.*)\)$/.exec(value);
    if (!m || value.includes("url(")) return null;
    const parts = m[1].split(/,(?![^(]*\))/).map((p) => p.trim());
    let angle = 180;
    const dirs = { "to top": 0, "to right": 90, "to bottom": 180, "to left": 270, "to top right": 45, "to right top": 45, "to bottom right": 135, "to right bottom": 135, "to bottom left": 225, "to left bottom": 225, "to top left": 315, "to left top": 315 };
    if (/deg$|turn$|rad$/.test(parts[0]) || parts[0] in dirs) {
      const p = parts.shift();
      angle = p in dirs ? dirs[p] : p.endsWith("turn") ? parseFloat(p) * 360 : p.endsWith("rad") ? parseFloat(p) * 180 / Math.PI : parseFloat(p);
    }
    const stops = [];
    for (const [i, p] of parts.entries()) {
      const sm = /^(.*?\))\s*([-\d.]+%)?(?:\s+([-\d.]+%))?$/.exec(p) || /^(\S+)\s*([-\d.]+%)?$/.exec(p);
      if (!sm) return null;
      const [c, a] = colour(sm[1]);
      stops.push([sm[2] ? parseFloat(sm[2]) / 100 : i / Math.max(1, parts.length - 1), c, a]);
      if (sm[3]) stops.push([parseFloat(sm[3]) / 100, c, a]);
    }
    return stops.length >= 2 ? { angle, stops } : null;
  };
  const shadow = (value) => {
    if (value === "none" || value.includes("inset")) return null;
    const first = value.split(/,(?![^(]*\))/)[0];
    const cm = /(rgba?\([^)]*\)|#[0-9a-f]+|[a-z]+\([^)]*\))/i.exec(first);
    const nums = first.replace(cm ? cm[0] : "", "").trim().split(/\s+/).map(px);
    const [c, a] = colour(cm ? cm[0] : "rgba(0,0,0,1)");
    return a > 0 ? { x: nums[0] || 0, y: nums[1] || 0, blur: nums[2] || 0, color: c, alpha: a } : null;
  };
  const radiusOf = (s, r) => {
    const corners = ["TopLeft", "TopRight", "BottomRight", "BottomLeft"].map((k) => s[`border${k}Radius`]);
    if (new Set(corners).size > 1) return null;
    const v = corners[0];
    return v.endsWith("%") ? (parseFloat(v) / 100) * Math.min(r.width, r.height) : px(v);
  };

  // A CSS url() background as an image item, when it is one non-repeating layer.
  const backgroundImage = (el, s, r) => {
    const layers = s.backgroundImage.split(/,(?![^(]*\))/);
    const url = /^url\("?(.*?)"?\)$/.exec(layers[0].trim());
    if (layers.length !== 1 || !url) return undefined;
    const img = new Image();
    img.src = url[1];
    if (!img.complete || !img.naturalWidth) return null;
    const [nw, nh] = [img.naturalWidth, img.naturalHeight];
    const size = s.backgroundSize;
    let w, h;
    if (size === "cover" || size === "contain") {
      const k = (size === "cover" ? Math.max : Math.min)(r.width / nw, r.height / nh);
      [w, h] = [nw * k, nh * k];
    } else {
      const [sw, sh = "auto"] = size.split(" ");
      const dim = (v, full) => (v === "auto" ? null : v.endsWith("%") ? (parseFloat(v) / 100) * full : px(v));
      w = dim(sw, r.width); h = dim(sh, r.height);
      if (w === null && h === null) [w, h] = [nw, nh];
      else if (w === null) w = (h * nw) / nh;
      else if (h === null) h = (w * nh) / nw;
    }
    if (s.backgroundRepeat !== "no-repeat" && (w < r.width - 0.5 || h < r.height - 0.5)) return null;
    const pos = (v, free) => (v.endsWith("%") ? (parseFloat(v) / 100) * free : px(v));
    const [x, y] = [r.left + pos(s.backgroundPositionX, r.width - w), r.top + pos(s.backgroundPositionY, r.height - h)];
    return { type: "image", src: img.src, image: [r2(x), r2(y), r2(w), r2(h)], rect: rect(r), radius: radiusOf(s, r) || 0, alt: el.getAttribute("aria-label") || "", alpha: r2(opacity(el)) };
  };

  const TRANSPARENT = "rgba(0, 0, 0, 0)";
  const paintBox = (el, s) => {
    const bare = s.backgroundColor === TRANSPARENT && s.backgroundImage === "none" && s.boxShadow === "none";
    if (bare && !px(s.borderTopWidth) && !px(s.borderRightWidth) && !px(s.borderBottomWidth) && !px(s.borderLeftWidth)) return;
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0 || s.visibility !== "visible") return;
    const op = opacity(el);
    const [fill, fa] = colour(s.backgroundColor);
    const grad = s.backgroundImage !== "none" ? gradient(s.backgroundImage) : null;
    const bgImage = s.backgroundImage !== "none" && !grad ? backgroundImage(el, s, r) : undefined;
    const widths = ["Top", "Right", "Bottom", "Left"].map((k) => (s[`border${k}Style`] === "none" || s[`border${k}Style`] === "hidden" ? 0 : px(s[`border${k}Width`])));
    const sides = ["Top", "Right", "Bottom", "Left"].map((k) => side(s, k, el));
    const radius = radiusOf(s, r);
    const sh = shadow(s.boxShadow);
    const paints = fa > 0 || grad || s.backgroundImage !== "none" || widths.some((w) => w > 0) || sh;
    if (!paints) return;
    if (radius === null || bgImage === null || (s.backgroundImage !== "none" && !grad && bgImage === undefined)) {
      emit(el, shot(el, r, "own"));
      return;
    }
    const uniform = widths.every((w) => w === widths[0]) && sides.every((x) => x.color === sides[0].color && x.alpha === sides[0].alpha);
    const item = { type: "box", rect: rect(r), fill: fa > 0 ? fill : null, alpha: r2(fa * op), gradient: grad, radius, shadow: sh, opacity: r2(op),
      ellipse: s.borderTopLeftRadius === "50%" && Math.abs(r.width - r.height) > 0.5 };
    if (uniform && widths[0] > 0) item.border = { w: widths[0], ...sides[0] };
    if (item.fill || item.gradient || item.border || item.shadow) emit(el, item);
    if (bgImage) emit(el, bgImage);
    if (!uniform) {
      const [t, rt, b, l] = widths;
      const bars = [[r.left, r.top, r.width, t], [r.right - rt, r.top, rt, r.height], [r.left, r.bottom - b, r.width, b], [r.left, r.top, l, r.height]];
      bars.forEach((bar, i) => { if (widths[i] > 0 && sides[i].alpha > 0) emit(el, { type: "box", rect: bar.map(r2), fill: sides[i].color, alpha: sides[i].alpha, radius: 0 }); });
    }
  };

  const shot = (el, r, mode) => {
    const id = shots.length;
    const visible = clipped(rect(r), clipOf(el));
    shots.push({ id, rect: visible, mode, index: indexOf.get(el) });
    return { type: "shot", id, rect: visible, alt: altOf(el) };
  };

  // What ancestors with overflow other than visible leave of an element: [x, y, w, h] of their
  // padding boxes intersected, and the corner radius of the innermost one (it rounds what it clips).
  const clipOf = (el) => {
    let [l, t, r, b] = [-Infinity, -Infinity, Infinity, Infinity];
    let radius = null;
    for (let a = el.parentElement; a && a !== html; a = a.parentElement) {
      const s = style(a);
      if (s.overflowX === "visible" && s.overflowY === "visible") continue;
      const box = a.getBoundingClientRect();
      l = Math.max(l, box.left + px(s.borderLeftWidth));
      t = Math.max(t, box.top + px(s.borderTopWidth));
      r = Math.min(r, box.right - px(s.borderRightWidth));
      b = Math.min(b, box.bottom - px(s.borderBottomWidth));
      if (radius === null) radius = radiusOf(s, box) || 0;
    }
    return { l, t, r, b, radius: radius || 0 };
  };
  const clipped = (rectArr, clip) => {
    const [x, y, w, h] = rectArr;
    const l = Math.max(x, clip.l), t = Math.max(y, clip.t), r = Math.min(x + w, clip.r), b = Math.min(y + h, clip.b);
    return [r2(l), r2(t), r2(Math.max(0, r - l)), r2(Math.max(0, b - t))];
  };

  // ---- images ----
  const image = (el, s) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0 || !el.complete || !el.naturalWidth || s.visibility !== "visible") return;
    const [nw, nh] = [el.naturalWidth, el.naturalHeight];
    const c = boxOf(el).content;
    let [w, h] = [c[2], c[3]];
    const fit = s.objectFit;
    if (fit === "contain" || fit === "cover" || fit === "scale-down") {
      const k = (fit === "cover" ? Math.max : Math.min)(c[2] / nw, c[3] / nh);
      const k2 = fit === "scale-down" ? Math.min(1, k) : k;
      [w, h] = [nw * k2, nh * k2];
    } else if (fit === "none") [w, h] = [nw, nh];
    const [ox = "50%", oy = "50%"] = s.objectPosition.split(" ");
    const pos = (v, free) => (v.endsWith("%") ? (parseFloat(v) / 100) * free : px(v));
    const x = c[0] + pos(ox, c[2] - w), y = c[1] + pos(oy, c[3] - h);
    const src = el.currentSrc || el.src;
    const svg = /\.svg(\?|#|$)/i.test(src) || src.startsWith("data:image/svg");
    if (svg) { emit(el, shot(el, r, "whole")); return; }
    const clip = clipOf(el);
    const frame = clipped(c, clip);
    const inherited = frame[2] < c[2] - 0.5 || frame[3] < c[3] - 0.5 ? clip.radius : 0;
    emit(el, { type: "image", src, image: [r2(x), r2(y), r2(w), r2(h)], rect: frame, radius: radiusOf(s, r) || inherited, alt: altOf(el), alpha: r2(opacity(el)) });
  };

  // ---- tables ----
  const table = (el) => {
    const r = el.getBoundingClientRect();
    const rows = [...el.rows].filter((row) => style(row).display !== "none");
    if (!rows.length) return false;
    const xs = new Set(), ys = new Set();
    const cells = [];
    for (const row of rows) {
      for (const cell of row.cells) {
        const cr = cell.getBoundingClientRect();
        if (cr.width <= 0 || cr.height <= 0) continue;
        xs.add(r2(cr.left)); xs.add(r2(cr.right)); ys.add(r2(cr.top)); ys.add(r2(cr.bottom));
        cells.push([cell, cr]);
      }
    }
    const snap = (values) => [...values].sort((a, b) => a - b).filter((v, i, all) => i === 0 || v - all[i - 1] > 1.5);
    const cx = snap(xs), cy = snap(ys);
    const at = (edges, v) => edges.reduce((best, e, i) => (Math.abs(e - v) < Math.abs(edges[best] - v) ? i : best), 0);
    const out = { type: "table", rect: rect(r), cols: cx.slice(1).map((x, i) => r2(x - cx[i])), rows: cy.slice(1).map((y, i) => r2(y - cy[i])), x: cx[0], y: cy[0], cells: [] };
    for (const [cell, cr] of cells) {
      const cs = style(cell);
      const [c0, c1, r0, r1] = [at(cx, cr.left), at(cx, cr.right), at(cy, cr.top), at(cy, cr.bottom)];
      if (c1 <= c0 || r1 <= r0) continue;
      let [fill, fa] = colour(cs.backgroundColor);
      for (const up of [cell.parentElement, cell.parentElement && cell.parentElement.parentElement]) {
        if (fa === 0 && up && up !== el) [fill, fa] = colour(style(up).backgroundColor);
      }
      const borders = {};
      for (const [k, name] of [["t", "Top"], ["r", "Right"], ["b", "Bottom"], ["l", "Left"]]) {
        const w = cs[`border${name}Style`] === "none" || cs[`border${name}Style`] === "hidden" ? 0 : px(cs[`border${name}Width`]);
        borders[k] = w > 0 ? { w, ...side(cs, name, cell) } : null;
      }
      const parts = inlineText(cell, (child) => visit(child));
      const box = boxOf(cell);
      const lines = textBlock(cell, cs, parts);
      out.cells.push({
        r: r0, c: c0, rs: r1 - r0, cs: c1 - c0, fill: fa > 0 ? fill : null, alpha: r2(fa * opacity(cell)), borders,
        pad: [px(cs.paddingTop), px(cs.paddingRight), px(cs.paddingBottom), px(cs.paddingLeft)],
        text: lines.length ? { rect: box.content, align: alignOf(cs), paras: [{ lines, bullet: null, lh: lineHeight(cs) }] } : null,
      });
    }
    emit(el, out);
    return true;
  };

  const lineHeight = (s) => (s.lineHeight === "normal" ? null : px(s.lineHeight));
  const alignOf = (s) => {
    const a = s.textAlign;
    const rtl = s.direction === "rtl";
    if (a === "center" || a === "-webkit-center") return "ctr";
    if (a === "right" || (a === "end" && !rtl) || (a === "start" && rtl)) return "r";
    if (a === "justify") return "just";
    return "l";
  };

  // ---- the walk ----
  const indexOf = new Map(all.map((el, i) => [el, i]));
  const painted = new Set();
  const visit = (el) => {
    if (painted.has(el) || SKIP.has(el.tagName)) return;
    painted.add(el);
    place(el); // an element paints before what it holds, even when emitted after it (a table after its cells)
    const s = style(el);
    if (s.display === "none" || opacity(el) <= 0.001) return;
    const index = indexOf.get(el);
    if (needsShot(el, s)) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && s.visibility === "visible") {
        const item = emit(el, shot(el, r, "whole"));
        if (el.tagName === "svg") svgText(el, shots[item.id]);
      }
      return;
    }
    if (el.tagName === "IMG") { image(el, s); return; }
    if (el !== html && el !== body) paintBox(el, s);
    const before = pseudo[index] && pseudo[index].before;
    if (before) pseudoBox(el, "before", before);
    if (el.tagName === "TABLE" && table(el)) {
      if (el.caption) visit(el.caption);
      return;
    }
    if (INLINE.has(s.display) && el !== body) {
      for (const child of el.children) visit(child);
    } else {
      const parts = inlineText(el, visit);
      const lines = parts.length ? textBlock(el, s, parts) : [];
      if (lines.length) {
        const box = boxOf(el);
        const bullet = marker(el, s, index);
        emit(el, { type: "text", rect: box.content, align: alignOf(s), paras: [{ lines, bullet, lh: lineHeight(s) }], parent: el.parentElement ? indexOf.get(el.parentElement) : -1 });
      }
    }
    const after = pseudo[index] && pseudo[index].after;
    if (after) pseudoBox(el, "after", after);
  };
  // <text> of an inline SVG: editable text over the SVG's picture (hidden on the picture).
  const svgText = (svg, request) => {
    request.hide = [];
    for (const t of svg.querySelectorAll("text")) {
      const m = t.getScreenCTM();
      const s = style(t);
      const r = t.getBoundingClientRect();
      if (!m || r.width <= 0 || s.visibility !== "visible" || t.querySelector("textPath")) continue;
      const text = t.textContent.replace(/[ \t\n\r\f]+/g, " ").trim();
      if (!text) continue;
      const [c, a] = s.fill.startsWith("rgb") ? colour(s.fill) : colour(s.color);
      const scale = Math.hypot(m.a, m.b);
      const size = px(s.fontSize) * scale;
      const run = { f: fontOf(s), s: r2(size), c, a: r2(a * opacity(t) * (parseFloat(s.fillOpacity) || 1)), u: false, k: false, ls: 0, va: 0, href: null, t: text };
      probe.font = `${s.fontStyle} ${s.fontWeight} ${size}px ${s.fontFamily}`;
      const asc = probe.measureText(text).fontBoundingBoxAscent;
      const angle = (Math.atan2(m.b, m.a) * 180) / Math.PI;
      if (Math.abs(angle) < 0.01) {
        emit(t, { type: "text", rect: rect(r), align: "l", paras: [{ lines: [{ x: r2(r.left), w: r2(r.width), top: r2(r.top), bottom: r2(r.bottom), base: r2(r.top + asc), runs: [run] }], bullet: null }] });
      } else {
        emit(t, { type: "rotated", rect: rect(r), angle: r2(angle), length: r2(t.getComputedTextLength() * scale), runs: [run] });
      }
      request.hide.push(indexOf.get(t));
    }
  };

  const pseudoBox = (el, which, box) => {
    const s = getComputedStyle(el, `::${which}`);
    if (s.display === "none" || s.visibility !== "visible") return;
    const fake = { left: box[0], top: box[1], width: box[2], height: box[3], right: box[0] + box[2], bottom: box[1] + box[3] };
    const [fill, fa] = colour(s.backgroundColor);
    const grad = s.backgroundImage !== "none" ? gradient(s.backgroundImage) : null;
    const radius = radiusOf(s, fake);
    const bw = s.borderTopStyle === "none" ? 0 : px(s.borderTopWidth);
    const op = opacity(el) * parseFloat(s.opacity);
    if (needsShot(el, s) && (fa > 0 || grad || bw)) {
      emit(el, shot(el, fake, "whole"));
    } else if (fa > 0 || grad || bw) {
      const item = { type: "box", rect: box.map(r2), fill: fa > 0 ? fill : null, alpha: r2(fa * op), gradient: grad, radius: radius === null ? 0 : radius, shadow: shadow(s.boxShadow), opacity: r2(op), name: `${nameOf(el)}::${which}` };
      if (bw) item.border = { w: bw, ...side(s, "Top", el) };
      emit(el, item);
    }
    const line = pseudoText(el, which, box);
    if (line) emit(el, { type: "text", rect: box.map(r2), align: "l", paras: [{ lines: [line], bullet: null }], name: `${nameOf(el)}::${which}` });
  };

  // The slide's background: the root's, else the body's (CSS propagates it to the canvas).
  const canvas = [html, body].map((el) => colour(style(el).backgroundColor)).find(([, a]) => a > 0);
  const rootImage = [html, body].map((el) => style(el).backgroundImage).find((v) => v !== "none");
  const background = { fill: canvas ? canvas[0] : "ffffff", gradient: rootImage ? gradient(rootImage) : null };
  if (rootImage && !background.gradient) {
    const el = style(html).backgroundImage !== "none" ? html : body;
    const bg = backgroundImage(el, style(el), { left: 0, top: 0, width, height, right: width, bottom: height });
    if (bg) emit(el, { ...bg, rect: [0, 0, width, height] });
    else emit(el, shot(el, { left: 0, top: 0, width, height }, "own"));
  }
  visit(html);
  items.sort((a, b) => {
    for (let i = 0; i < Math.min(a.key.length, b.key.length); i++) if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
    return a.key.length - b.key.length;
  });
  items.forEach((item) => delete item.key);
  const webfonts = [...document.fonts].filter((f) => f.status === "loaded").map((f) => f.family.replace(/^"|"$/g, ""));
  const heading = document.querySelector("h1, h2, h3");
  return JSON.stringify({
    size: [width, height], lang: html.lang || body.lang || "", background, items, shots, fonts, webfonts,
    title: heading ? heading.textContent.replace(/\s+/g, " ").trim() : "",
  });
}
