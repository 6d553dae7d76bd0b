// Rectangles, selectors and inherited tests (helpers.js has styles, opacity and clipping).
// Part of measure.js: included into its function, whose scope it shares (render/page_script.py).

const round = (v) => Math.round(v * 10) / 10;
const box = (r) => [round(r.l), round(r.t), round(r.r), round(r.b)];
const fromDom = (r) => ({ l: r.left, t: r.top, r: r.right, b: r.bottom });
const area = (r) => Math.max(0, r.r - r.l) * Math.max(0, r.b - r.t);
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

const alphaOf = (css) => (css.startsWith("rgba") ? parseFloat(css.split(",")[3]) : css.startsWith("rgb") ? 1 : 0);
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

