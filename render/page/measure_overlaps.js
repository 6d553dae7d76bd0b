// Overlaps between content items, and which one is painted on top (hit-tests).
// Part of measure.js: included into its function, whose scope it shares (render/page_script.py).

// Overlaps: content items (text as the ink of its lines) sharing an area, neither containing the
// other; full-slide and behind-the-page media are left out. For each pair, points in the shared
// area are hit-tested to find which item is painted on top, whether it has ink there, what lies
// under it (text, an svg's shapes or labels, thin lines, nothing, an image) and whether a layer
// with a background (a scrim, a backing) lies between the two.
const candidates = [
  ...textItems.filter((t) => !t.svg && t.shown.length).map((t) => ({ el: t.el, index: t.index, rects: t.shown, text: t })),
  ...mediaItems.filter((m) => !items[m.index].full && !items[m.index].behind)
    .map((m) => ({ el: m.el, index: m.index, rects: [m.ink] })),
].filter((i) => i.rects.every((r) => area(r) > 0)).slice(0, 600);
for (const i of candidates) i.bbox = union(i.rects);
const meets = (as, bs) => {
  const parts = [];
  for (const ra of as) for (const rb of bs) {
    const m = meet(meet(ra, rb), SLIDE);
    if (m.r - m.l >= minSide && m.b - m.t >= minSide) parts.push(m);
  }
  return parts;
};
// Text line boxes first (cheap), then the ink of the texts whose boxes meet something.
const solid = (i) => {
  if (!i.ink) i.ink = i.text ? visibleInk(i.text) : i.rects;
  return i.ink;
};
const pairs = [];
for (let x = 0; x < candidates.length; x++) {
  for (let y = x + 1; y < candidates.length; y++) {
    const a = candidates[x], b = candidates[y];
    if (area(meet(a.bbox, b.bbox)) <= 0 || a.el.contains(b.el) || b.el.contains(a.el) || !meets(a.rects, b.rects).length) continue;
    const parts = meets(solid(a), solid(b));
    const shared = parts.reduce((s, m) => s + area(m), 0);
    a.area = solid(a).reduce((s, r) => s + area(r), 0);
    b.area = solid(b).reduce((s, r) => s + area(r), 0);
    const smaller = Math.min(a.area, b.area);
    if (!parts.length || shared < minArea || shared < minShare * smaller) continue;
    pairs.push({ a, b, parts, shared, smaller });
  }
}
const backed = (el) => style(el).backgroundImage !== "none" || alphaOf(style(el).backgroundColor) >= 0.3;
const underKind = (item, el, shapes) => {
  if (items[item.index].kind === "text") return "text";
  if (items[item.index].kind !== "svg") return "box";
  if (el === item.el) return "none";
  if (el instanceof SVGTextContentElement) return "text";
  const s = style(el);
  const r = el.getBoundingClientRect();
  const scale = el.getScreenCTM ? Math.hypot(el.getScreenCTM().a, el.getScreenCTM().b) : 1;
  const stroke = s.stroke === "none" ? 0 : parseFloat(s.strokeWidth) * scale;
  if (Math.max(s.fill === "none" ? 0 : Math.min(r.width, r.height), stroke) <= 1.5) return "thin";
  shapes.add(el);
  return "shape";
};
// Which item is painted on top: hit-test order where both are found (glyphs can lie outside their
// element's box with a tight line-height: then ask where the two boxes meet).
const onTop = (a, b, stacks) => {
  let votes = 0;
  for (const stack of stacks) {
    const ia = stack.findIndex((e) => a.el.contains(e)), ib = stack.findIndex((e) => b.el.contains(e));
    if (ia >= 0 && ib >= 0) votes += ia < ib ? 1 : -1;
  }
  if (votes) return votes > 0 ? a : b;
  const m = meet(meet(fromDom(a.el.getBoundingClientRect()), fromDom(b.el.getBoundingClientRect())), SLIDE);
  if (area(m) <= 0) return null;
  const stack = document.elementsFromPoint((m.l + m.r) / 2, (m.t + m.b) / 2);
  const ia = stack.findIndex((e) => a.el.contains(e)), ib = stack.findIndex((e) => b.el.contains(e));
  return ia >= 0 && ib >= 0 ? (ia < ib ? a : b) : null;
};
const probe = ({ a, b, parts }) => {
  const points = [];
  for (const m of parts) {
    for (const fx of [1 / 6, 1 / 2, 5 / 6]) for (const fy of [1 / 4, 3 / 4]) points.push([m.l + fx * (m.r - m.l), m.t + fy * (m.b - m.t)]);
  }
  const step = Math.max(1, Math.floor(points.length / 24));
  const stacks = [];
  for (let p = 0; p < points.length; p += step) stacks.push(document.elementsFromPoint(points[p][0], points[p][1]));
  const top = onTop(a, b, stacks);
  const out = { n: 0, aTop: top === a, topInk: 0, backdrop: 0, shapes: 0, under: { text: 0, shape: 0, thin: 0, none: 0, box: 0 } };
  if (!top) return out;
  const under = top === a ? b : a;
  const shapes = new Set();
  for (const stack of stacks) {
    const it = stack.findIndex((e) => top.el.contains(e)), iu = stack.findIndex((e) => under.el.contains(e));
    const textUnder = items[under.index].kind === "text";
    if (iu < 0 && !textUnder) continue;
    out.n += 1;
    const kind = items[top.index].kind;
    out.topInk += kind === "text" || (it >= 0 && (kind !== "svg" || stack[it] !== top.el)) ? 1 : 0;
    out.under[textUnder ? "text" : underKind(under, stack[iu], shapes)] += 1;
    out.backdrop += !textUnder && stack.slice(it + 1, iu).some(backed) ? 1 : 0;
  }
  out.shapes = shapes.size;
  return out;
};
// A picture the other item was placed on: it fills their nearest common container.
const fillsCommon = (media, other) => {
  let common = media.parentElement;
  while (common && !common.contains(other)) common = common.parentElement;
  if (!common) return false;
  const c = fromDom(common.getBoundingClientRect());
  return area(c) > 0 && area(meet(fromDom(media.getBoundingClientRect()), c)) >= 0.9 * area(c);
};
// A text over what may be a chart (an svg, canvas or img; render/defects/overlap.py decides): the box it
// hides there (its backing, else its glyphs), and the part of the page that render/page/covers.js hides
// for a capture of the picture beneath it (render/renderer.py): the text's ancestor just below the nearest
// one they share.
const CHARTS = ["svg", "canvas", "img"];
const covering = [];
const coverOf = (text, media, parts) => {
  let branch = text.el;
  while (branch.parentElement && !branch.parentElement.contains(media.el)) branch = branch.parentElement;
  let backing = text.el;
  while (backing !== branch && !backed(backing)) backing = backing.parentElement;
  const over = backed(backing) ? fromDom(backing.getBoundingClientRect()) : union(parts);
  const shown = meet(meet(over, media.bbox), SLIDE);
  if (area(shown) <= 0) return null;
  covering.push(branch);
  return box(shown);
};
const overlaps = [];
if (pairs.length) {
  // Hit-testing skips `pointer-events: none`, which decoration often sets: lift it while probing.
  const lift = document.createElement("style");
  lift.textContent = "*, *::before, *::after { pointer-events: auto !important; }";
  (document.head || html).appendChild(lift);
  try {
    for (const pair of pairs) {
      const { a, b } = pair;
      // Text on text needs no probe: whichever is on top, glyphs collide.
      const texts = items[a.index].kind === "text" && items[b.index].kind === "text";
      const hits = texts ? { n: 0 } : probe(pair);
      const under = hits.aTop ? b : a, over = under === a ? b : a;
      const onChart = hits.n > 0 && items[over.index].kind === "text" && CHARTS.includes(items[under.index].kind);
      overlaps.push({ a: a.index, b: b.index, area: round(pair.shared), smaller: round(pair.smaller), box: box(union(pair.parts)),
        inside: [pair.shared / a.area, pair.shared / b.area].map((v) => Math.round(v * 100) / 100),
        fills: !texts && items[under.index].kind !== "text" && fillsCommon(under.el, over.el),
        cover: onChart ? coverOf(over, under, pair.parts) : null, chart: onChart ? box(meet(under.bbox, SLIDE)) : null, ...hits });
    }
  } finally {
    lift.remove();
  }
}
window[Symbol.for("deckforge.covers")] = covering;
