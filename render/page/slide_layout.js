// In-page reading of a rendered slide for the editable PPTX (deck/layout.py evaluates it).
// Returns a JSON string: what Chromium laid out, in paint order, in CSS px of the slide:
//   boxes (fills, linear gradients, borders, rounded corners, shadows), images (<img> and CSS
//   background images with the part of the file that shows), text blocks (lines as Chromium broke
//   them, runs with their fonts, sizes, weights, colours, baselines), tables (cells with their text),
//   and "shots": elements PowerPoint has no equivalent for (SVG, canvas, filters, transforms),
//   to be captured as pictures by the caller.
// `pseudo` maps an element's index in document order to the boxes of its ::before / ::after /
// ::marker (read over CDP, which alone knows them); null: the page is asked first whether it has
// any ::before / ::after, and answers {"needs": "pseudo"} when it does.
async ({ width, height, tol, pseudo }) => {
  await document.fonts.ready;
  window.scrollTo(0, 0);
  const all = [...document.querySelectorAll("*")];
  if (pseudo === null) {
    // ::before and ::after boxes come from a DOM snapshot: ask for one only when a page has them.
    const has = (el, which) => { const c = getComputedStyle(el, which).content; return c !== "none" && c !== "normal"; };
    if (all.some((el) => has(el, "::before") || has(el, "::after"))) return JSON.stringify({ needs: "pseudo" });
    pseudo = {};
  }

  // include: helpers.js

  // include: layout_css.js

  // include: layout_text.js

  // include: layout_boxes.js

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
