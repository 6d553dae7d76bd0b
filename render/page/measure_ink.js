// Text ink: where glyphs are, from canvas metrics of the fonts Chromium used.
// Part of measure.js: included into its function, whose scope it shares (render/page_script.py).

// Text ink: where the glyphs are, not the line box. A text's line box (its content area) is the
// font's ascent + descent tall; canvas metrics of the same font and text give how far its glyphs
// reach around the baseline (a transform scales both alike). Measured lazily: only lines whose
// box reaches past a clipping edge or meets another item need their ink.
let ctx = null;
let font = "";
const setFont = (s) => {
  const f = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  ctx = ctx || document.createElement("canvas").getContext("2d");
  if (f !== font) { ctx.font = f; font = f; }
  return f;
};
const fonts = new Map();
const fontBox = (s) => {
  const f = setFont(s);
  if (!fonts.has(f)) {
    const m = ctx.measureText("x");
    fonts.set(f, { fa: m.fontBoundingBoxAscent, fd: m.fontBoundingBoxDescent });
  }
  return fonts.get(f);
};
const glyphs = (text, s) => {
  setFont(s);
  const shown = s.textTransform === "uppercase" ? text.toUpperCase() : s.textTransform === "lowercase" ? text.toLowerCase() : text;
  const m = ctx.measureText(shown);
  return { aa: m.actualBoundingBoxAscent, ad: m.actualBoundingBoxDescent, al: m.actualBoundingBoxLeft,
    ar: m.actualBoundingBoxRight, w: m.width, rtl: s.direction === "rtl" };
};
// Horizontally too where the canvas laid the same text out as wide as the line (no justification,
// letter spacing or right-to-left run): the ink of the first and last glyphs, not their advances.
const inkOf = (r, f, g) => {
  const k = r.height / (f.fa + f.fd || r.height);
  const base = r.top + f.fa * k;
  const same = !g.rtl && Math.abs(g.w * k - r.width) <= 1;
  return { l: same ? r.left - g.al * k : r.left, t: base - g.aa * k, r: same ? r.left + g.ar * k : r.right, b: base + g.ad * k };
};
// Transformed text: its line boxes are scaled (their height gives the scale) or, rotated (a CSS
// rotate, an svg label turned on its axis), axis-aligned bounds that stand for its ink.
const transformed = inherited((el) => style(el).transform !== "none");
const rotated = (el) => {
  if (el instanceof SVGGraphicsElement) {
    const m = el.getScreenCTM();
    return !!m && (Math.abs(m.b) > 1e-6 || Math.abs(m.c) > 1e-6);
  }
  for (let a = el; a; a = a.parentElement) {
    const t = style(a).transform;
    if (t === "none") continue;
    const v = t.startsWith("matrix(") ? t.slice(7, -1).split(",").map(parseFloat) : null;
    if (!v || Math.abs(v[1]) > 1e-6 || Math.abs(v[2]) > 1e-6) return true;
  }
  return false;
};
// A line's ink from its text node's glyphs (all of its lines: a superset), and exactly from its own
// characters where the line looks cut, so that a descender on another line does not count.
const nodeGlyphs = new Map();
const inkLine = (l) => {
  if (!l.ink) {
    if (!nodeGlyphs.has(l.node)) nodeGlyphs.set(l.node, glyphs(l.node.data.trim(), l.s));
    l.ink = l.turned ? l.content : inkOf(l.box, fontBox(l.s), nodeGlyphs.get(l.node));
  }
  return l.ink;
};
const charBoxes = new Map();
const lineInk = (line) => {
  const { node, s, box: r } = line;
  if (line.turned) return line.content;
  if (!charBoxes.has(node)) {
    const boxes = [];
    for (let i = 0; i < node.length; i++) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      boxes.push(range.getBoundingClientRect());
    }
    charBoxes.set(node, boxes);
  }
  let text = "";
  charBoxes.get(node).forEach((c, i) => {
    const inside = c.top >= r.top - 1 && c.bottom <= r.bottom + 1 && c.left >= r.left - 1 && c.right <= r.right + 1;
    if (c.width > 0 && inside) text += node.data[i];
  });
  return text.trim() ? inkOf(r, fontBox(s), glyphs(text, s)) : null;
};
// The exact ink (inside `within`) of the lines whose ink reaches past `edge`.
const cutInk = (lines, edge, within) => lines
  .filter((l) => past(meet(l.content, within), edge) && past(meet(inkLine(l), within), edge))
  .map((l) => { const ink = lineInk(l); return ink && meet(ink, within); })
  .filter((r) => r && area(r) > 0);
