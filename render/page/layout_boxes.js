// Boxes (fills, gradients, borders, shadows), background images, pictures of elements, images and tables.
// Part of slide_layout.js: included into its function, whose scope it shares (render/page_script.py).

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
  const visible = clipped(rect(r), el);
  shots.push({ id, rect: visible, mode, index: indexOf.get(el) });
  return { type: "shot", id, rect: visible, alt: altOf(el) };
};

// What an element's clipping ancestors (helpers.js clipOf) leave of [x, y, w, h]: the slide edge
// clips too where one clips there.
const clipped = (rectArr, el) => {
  const clip = clipOf(el, false);
  const c = clip.edge ? meet(clip.rect, SLIDE) : clip.rect;
  const [x, y, w, h] = rectArr;
  const l = Math.max(x, c.l), t = Math.max(y, c.t), r = Math.min(x + w, c.r), b = Math.min(y + h, c.b);
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
  const frame = clipped(c, el);
  // Cut by a clipping ancestor: the innermost one's corner radius rounds it.
  const inner = clipOf(el, false).clippers[0];
  const cut = inner && (frame[2] < c[2] - 0.5 || frame[3] < c[3] - 0.5);
  const inherited = cut ? radiusOf(style(inner.el), inner.el.getBoundingClientRect()) || 0 : 0;
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
