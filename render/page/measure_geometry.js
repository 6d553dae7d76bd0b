// Computed styles, rectangles, selectors, opacity and the clipping ancestors of an element.
// Part of measure.js: included into its function, whose scope it shares (render/page_script.py).

const styles = new Map();
const style = (el) => {
  let s = styles.get(el);
  if (!s) { s = getComputedStyle(el); styles.set(el, s); }
  return s;
};
const round = (v) => Math.round(v * 10) / 10;
const box = (r) => [round(r.l), round(r.t), round(r.r), round(r.b)];
const fromDom = (r) => ({ l: r.left, t: r.top, r: r.right, b: r.bottom });
const area = (r) => Math.max(0, r.r - r.l) * Math.max(0, r.b - r.t);
const meet = (a, b) => ({ l: Math.max(a.l, b.l), t: Math.max(a.t, b.t), r: Math.min(a.r, b.r), b: Math.min(a.b, b.b) });
const union = (rs) => rs.reduce((u, r) => ({ l: Math.min(u.l, r.l), t: Math.min(u.t, r.t), r: Math.max(u.r, r.r), b: Math.max(u.b, r.b) }));
const beyond = (r, c) => [c.l - r.l, c.t - r.t, r.r - c.r, r.b - c.b].map((v) => round(Math.max(0, v)));
const past = (r, c) => Math.max(...beyond(r, c)) > tol;

const selectors = new Map();
const part = (el) => {
  const tag = el.tagName.toLowerCase();
  if (el.id) return `${tag}#${el.id}`;
  let s = el.classList.length ? `${tag}.${el.classList[0]}` : tag;
  const parent = el.parentElement;
  if (parent) {
    const same = [...parent.children].filter((c) => c.tagName === el.tagName);
    if (same.length > 1) s += `:nth-of-type(${same.indexOf(el) + 1})`;
  }
  return s;
};
const selector = (el) => {
  if (selectors.has(el)) return selectors.get(el);
  let s = part(el);
  const parent = el.parentElement;
  if (!el.id && !el.classList.length && parent && parent !== body && parent !== html) s = `${part(parent)} > ${s}`;
  selectors.set(el, s);
  return s;
};

const opacities = new Map();
const opacity = (el) => {
  if (!el || el.nodeType !== 1) return 1;
  if (!opacities.has(el)) opacities.set(el, parseFloat(style(el).opacity) * opacity(el.parentElement));
  return opacities.get(el);
};
const alphaOf = (css) => (css.startsWith("rgba") ? parseFloat(css.split(",")[3]) : css.startsWith("rgb") ? 1 : 0);
const clipsX = (s) => s.overflowX !== "visible";
const clipsY = (s) => s.overflowY !== "visible";
const rootClips = clipsX(style(html)) || clipsY(style(html)) || clipsX(style(body)) || clipsY(style(body));
const propagates = (el) => el === html || (el === body && !clipsX(style(html)) && !clipsY(style(html)));
const coversSlide = (r) => r.l <= tol && r.t <= tol && r.r >= width - tol && r.b >= height - tol;
// A test that holds for an element when it holds for it or an ancestor (below html), memoised.
const inherited = (test) => {
  const seen = new Map();
  const of = (el) => {
    if (!el || el === html) return false;
    if (!seen.has(el)) seen.set(el, test(el) || of(el.parentElement));
    return seen.get(el);
  };
  return of;
};

// Ancestors that clip `el`: `rect` intersects the padding boxes of the inner ones (smaller than the
// slide); `edge` says whether one clips at the slide edge (the root, or a box covering the slide).
// Follows containing blocks: an absolute box escapes non-positioned clippers.
const clipCache = [new Map(), new Map()];
const clipOf = (el, includeSelf) => {
  const cache = clipCache[includeSelf ? 1 : 0];
  if (cache.has(el)) return cache.get(el);
  let rect = { l: -Infinity, t: -Infinity, r: Infinity, b: Infinity };
  const clippers = [];
  let edge = rootClips;
  let pos = style(el).position;
  for (let a = includeSelf ? el : el.parentElement; a; a = a.parentElement) {
    const s = style(a);
    const self = a === el;
    const contains = self || (pos === "fixed" ? s.transform !== "none"
      : pos === "absolute" ? (s.position !== "static" || s.transform !== "none") : true);
    if (!contains) continue;
    if (!propagates(a) && (clipsX(s) || clipsY(s))) {
      const r = a.getBoundingClientRect();
      // Inside an svg (a foreignObject) client sizes are in user units: the box is the clip.
      const inner = a instanceof SVGElement && a.ownerSVGElement;
      const l = r.left + (inner ? 0 : a.clientLeft), t = r.top + (inner ? 0 : a.clientTop);
      const w = inner ? r.width : a.clientWidth, h = inner ? r.height : a.clientHeight;
      const pad = { l: clipsX(s) ? l : -Infinity, t: clipsY(s) ? t : -Infinity,
        r: clipsX(s) ? l + w : Infinity, b: clipsY(s) ? t + h : Infinity };
      if (coversSlide(pad)) {
        edge = true;
      } else {
        rect = meet(rect, pad);
        clippers.push({ el: a, pad });
      }
    }
    if (!self) pos = s.position;
  }
  const out = { rect, clippers, edge };
  cache.set(el, out);
  return out;
};
