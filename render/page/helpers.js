// What the slide inspection, the layout export and the reader's text read alike: the page's root,
// computed styles, opacity and what clipping ancestors leave of an element, so that they agree on it.
// Part of measure.js, slide_layout.js and slide_text.js: included into their function, whose scope it shares
// (render/page_script.py); it uses their `width`, `height` and `tol`.

const html = document.documentElement;
const body = document.body || html;
const SLIDE = { l: 0, t: 0, r: width, b: height };
const meet = (a, b) => ({ l: Math.max(a.l, b.l), t: Math.max(a.t, b.t), r: Math.min(a.r, b.r), b: Math.min(a.b, b.b) });
const range = document.createRange();

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

const opacities = new Map();
const opacity = (el) => {
  if (!el || el.nodeType !== 1) return 1;
  if (!opacities.has(el)) opacities.set(el, parseFloat(style(el).opacity) * opacity(el.parentElement));
  return opacities.get(el);
};

const clipsX = (s) => s.overflowX !== "visible";
const clipsY = (s) => s.overflowY !== "visible";
const rootClips = clipsX(style(html)) || clipsY(style(html)) || clipsX(style(body)) || clipsY(style(body));
// The root's overflow (or the body's, when the root's is visible) clips the viewport, not its own box.
const propagates = (el) => el === html || (el === body && !clipsX(style(html)) && !clipsY(style(html)));
const coversSlide = (r) => r.l <= tol && r.t <= tol && r.r >= width - tol && r.b >= height - tol;

// Ancestors that clip `el`: `rect` intersects the padding boxes of the inner ones (smaller than the
// slide); `edge` says whether one clips at the slide edge (the root, or a box covering the slide).
// Follows containing blocks: an absolute box escapes non-positioned clippers. A padding box is the
// border box as drawn (scaled by a transform, in CSS px inside an svg too) less the borders.
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
      const pad = {
        l: clipsX(s) ? r.left + parseFloat(s.borderLeftWidth) : -Infinity,
        t: clipsY(s) ? r.top + parseFloat(s.borderTopWidth) : -Infinity,
        r: clipsX(s) ? r.right - parseFloat(s.borderRightWidth) : Infinity,
        b: clipsY(s) ? r.bottom - parseFloat(s.borderBottomWidth) : Infinity,
      };
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
