// In-page measurement of one rendered slide (agents/inspection.py evaluates it once per render).
// Returns a JSON string (one string crosses the Playwright protocol far cheaper than a deep object):
// boxes in CSS px as [left, top, right, bottom]. It measures and reports signals; agents/defects/
// judges what is content and what is a defect (docs/inspection.md).
async ({ width, height, tol, minSide, minArea, minShare }) => {
  const measure = async () => {
    for (const anim of document.getAnimations()) {
      // Entrance animations would leave text invisible at t=0: jump to the end state.
      const timing = anim.effect ? anim.effect.getComputedTiming() : null;
      if (timing && Number.isFinite(timing.endTime)) anim.finish(); else anim.cancel();
    }
    await document.fonts.ready;
    window.scrollTo(0, 0);

    const html = document.documentElement;
    const body = document.body || html;
    const SLIDE = { l: 0, t: 0, r: width, b: height };
    const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "TITLE", "META", "LINK"]);
    const MEDIA = "img, svg, canvas, video, iframe, object, embed, table";
    const SHAPES = "path, rect, circle, ellipse, line, polyline, polygon, image, use";

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
    const range = document.createRange();
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

    // Signals of decoration a reviewer uses (agents/defects/decoration.py weighs them).
    const hidden = inherited((el) => el.getAttribute("aria-hidden") === "true" || ["presentation", "none"].includes(el.getAttribute("role")));
    const marked = (el) => hidden(el) || (el.tagName === "IMG" && el.getAttribute("alt") === "");
    const behind = inherited((el) => style(el).position !== "static" && parseInt(style(el).zIndex, 10) < 0);
    const fillsParent = (el) => {
      const parent = el.parentElement;
      if (!["absolute", "fixed"].includes(style(el).position) || !parent) return false;
      const container = fromDom(parent.getBoundingClientRect());
      return area(container) > 0 && area(meet(fromDom(el.getBoundingClientRect()), container)) >= 0.9 * area(container);
    };

    // Text: runs (per parent element: colour and size for contrast, over the font-size band of each line
    // box) and blocks (per nearest block box, or per svg <text>: clipping, overflow, overlap, over ink).
    const runs = new Map();
    const blocks = new Map();
    const blockOf = (el) => {
      if (el instanceof SVGElement) return el.closest("text") || el;
      let b = el;
      while (b !== body && ["inline", "contents"].includes(style(b).display)) b = b.parentElement;
      return b;
    };
    const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.data.trim();
      const parent = node.parentElement;
      if (!text || !parent || SKIP.has(parent.tagName) || parent.closest("noscript, template, svg svg")) continue;
      const s = style(parent);
      if (s.visibility !== "visible" || opacity(parent) < 0.05) continue;
      range.selectNodeContents(node);
      const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
      if (!rects.length) continue;
      // Untransformed HTML text is drawn at its font size; else the line box gives the scale.
      const inSvg = parent instanceof SVGElement;  // not the HTML of a <foreignObject>
      const plain = !inSvg && !transformed(parent) && !parent.closest("foreignObject");
      const f = plain ? null : fontBox(s);
      const turned = !plain && Math.abs(rects[0].height - (f.fa + f.fd)) > 1 && rotated(parent);
      const fs = parseFloat(s.fontSize) * (plain || turned ? 1 : rects[0].height / (f.fa + f.fd || rects[0].height));
      const lines = rects.map((r) => ({ node, s, box: r, content: fromDom(r), turned, ink: null }));
      if (!runs.has(parent)) runs.set(parent, { el: parent, bands: [], text: "", style: s, size: fs, svg: inSvg });
      const run = runs.get(parent);
      for (const r of rects) {
        const band = turned ? r.height : Math.min(r.height, fs);
        const top = r.top + (r.height - band) / 2;
        run.bands.push({ l: r.left, t: top, r: r.right, b: top + band });
      }
      run.text += text;
      const block = blockOf(parent);
      if (!blocks.has(block)) blocks.set(block, { el: block, lines: [], chars: 0, size: 0, svg: inSvg, color: s.color });
      const b = blocks.get(block);
      b.lines.push(...lines);
      b.chars += text.length;
      b.size = Math.max(b.size, fs);
    }

    const items = [];
    const itemOf = new Map();
    const addItem = (el, kind, extra) => {
      itemOf.set(el, items.length);
      items.push({ el, kind, opacity: round(opacity(el) * 100) / 100, marked: marked(el),
        pointer: style(el).pointerEvents === "none", behind: behind(el), ...extra });
      return items.length - 1;
    };

    const textItems = [...blocks.values()].map((b) => {
      const clip = clipOf(b.el, true);
      const shown = b.lines.map((l) => meet(l.content, clip.rect)).filter((r) => area(r) > 0);
      const index = b.svg ? -1 : addItem(b.el, "text", { size: round(b.size), chars: b.chars, color: b.color,
        full: false, fills: false });
      return { ...b, clip, shown, index };
    });
    const visibleInk = (t) => t.lines.map((l) => meet(inkLine(l), t.clip.rect)).filter((r) => area(r) > 0);

    // Media: the box, or for an svg the bounding box of what it draws (inside its viewport unless it
    // shows overflow); `full` covers the slide, `fills` is a picture filling its container.
    const svgInk = (svg, rect) => {
      let bb;
      try { bb = svg.getBBox(); } catch (e) { return rect; }
      const m = svg.getScreenCTM();
      if (!m || (!bb.width && !bb.height)) return rect;
      const xs = [], ys = [];
      for (const [x, y] of [[bb.x, bb.y], [bb.x + bb.width, bb.y], [bb.x, bb.y + bb.height], [bb.x + bb.width, bb.y + bb.height]]) {
        xs.push(m.a * x + m.c * y + m.e);
        ys.push(m.b * x + m.d * y + m.f);
      }
      const ink = { l: Math.min(...xs), t: Math.min(...ys), r: Math.max(...xs), b: Math.max(...ys) };
      return style(svg).overflow === "visible" ? ink : meet(ink, rect);
    };
    const mediaItems = [];
    for (const el of body.querySelectorAll(MEDIA)) {
      if (el.tagName.toUpperCase() === "SVG" && el.parentElement && el.parentElement.closest("svg")) continue;
      const s = style(el);
      if (s.visibility !== "visible" || opacity(el) < 0.05) continue;
      const rect = fromDom(el.getBoundingClientRect());
      if (area(rect) < 1) continue;
      const clip = clipOf(el, false);
      const vis = meet(rect, clip.rect);
      if (area(vis) < 1) continue;
      const isSvg = el.tagName.toUpperCase() === "SVG";
      const ink = isSvg ? meet(svgInk(el, rect), clip.rect) : vis;
      const index = addItem(el, el.tagName.toLowerCase(), {
        full: area(meet(vis, SLIDE)) >= 0.9 * width * height, fills: fillsParent(el),
        shapes: isSvg ? el.querySelectorAll(SHAPES).length : 0, svgText: isSvg && !!el.querySelector("text"),
        side: round(Math.min(rect.r - rect.l, rect.b - rect.t)),
      });
      mediaItems.push({ el, vis, ink, index });
    }

    // Clipped text, and content past the slide edge (ink: glyphs, an svg's drawing).
    const clipped = [];
    const outside = [];
    const reported = [];
    for (const item of mediaItems) {
      if (area(item.ink) > 0 && past(item.ink, SLIDE)) {
        outside.push({ el: selector(item.el), item: item.index, kind: item.el.tagName.toLowerCase(),
          box: box(item.ink), past: beyond(item.ink, SLIDE), text: false });
        reported.push(item.el);
      }
    }
    const anywhere = { l: -Infinity, t: -Infinity, r: Infinity, b: Infinity };
    for (const item of textItems) {
      if (reported.some((m) => m.contains(item.el))) continue;
      const boxes = union(item.lines.map((l) => l.content));
      let cut = null;
      for (const c of item.clip.clippers) {
        if (!past(boxes, c.pad)) continue;
        const ink = cutInk(item.lines, c.pad, anywhere);
        if (ink.length && past(union(ink), c.pad)) { cut = { by: selector(c.el), hidden: beyond(union(ink), c.pad) }; break; }
      }
      if (!cut && item.shown.length && past(union(item.shown), SLIDE)) {
        const ink = cutInk(item.lines, SLIDE, item.clip.rect);
        if (ink.length && past(union(ink), SLIDE)) {
          const hidden = beyond(union(ink), SLIDE);
          if (!item.clip.edge) {
            outside.push({ el: selector(item.el), item: item.index, kind: "text", box: box(union(ink)), past: hidden, text: true });
            continue;
          }
          cut = { by: "slide edge", hidden };
        }
      }
      if (cut) clipped.push({ el: selector(item.el), by: cut.by, box: box(union(item.lines.map(inkLine))), hidden: cut.hidden });
    }

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
          const under = hits.aTop ? b : a;
          overlaps.push({ a: a.index, b: b.index, area: round(pair.shared), smaller: round(pair.smaller), box: box(union(pair.parts)),
            inside: [pair.shared / a.area, pair.shared / b.area].map((v) => Math.round(v * 100) / 100),
            fills: !texts && items[under.index].kind !== "text" && fillsCommon(under.el, (under === a ? b : a).el), ...hits });
        }
      } finally {
        lift.remove();
      }
    }

    // Text runs for contrast and blank checks (visible part inside the slide only); svg text is
    // painted with `fill`.
    const texts = [];
    for (const run of runs.values()) {
      const s = run.style;
      const visible = run.bands.map((r) => meet(meet(r, clipOf(run.el, true).rect), SLIDE)).filter((r) => area(r) > 0);
      if (!visible.length) continue;
      const paint = run.svg ? (s.fill.startsWith("rgb") ? s.fill : "rgba(0, 0, 0, 0)") : s.color;
      const block = blockOf(run.el);
      texts.push({
        el: selector(run.el), rects: visible.slice(0, 40).map(box), color: paint,
        opacity: Math.round(opacity(run.el) * (run.svg ? parseFloat(s.fillOpacity) : 1) * 100) / 100,
        size: round(run.size), weight: parseInt(s.fontWeight, 10) || 400, chars: run.text.length,
        letters: /[\p{L}\p{N}]/u.test(run.text),
        fill: run.svg ? paint : s.webkitTextFillColor,
        shadow: s.textShadow !== "none" || parseFloat(s.webkitTextStrokeWidth) > 0 || (run.svg && s.stroke !== "none"),
        blend: s.mixBlendMode !== "normal" || s.filter !== "none",
        item: run.svg ? itemOf.get(block.closest("svg")) ?? -1 : itemOf.get(block) ?? -1,
      });
    }

    // Images that failed, and CSS background images (Python matches them against failed requests).
    const images = [];
    for (const img of body.querySelectorAll("img")) {
      let broken = img.complete && img.naturalWidth === 0;
      if (broken) broken = await img.decode().then(() => false, () => true);
      images.push({ el: selector(img), src: img.getAttribute("src") || "", url: img.currentSrc || img.src, broken });
    }
    const backgrounds = [];
    for (const el of [html, ...body.querySelectorAll("*"), body]) {
      if (SKIP.has(el.tagName)) continue;
      const bg = style(el).backgroundImage;
      if (!bg || !bg.includes("url(")) continue;
      const urls = [...bg.matchAll(/url\("?(.*?)"?\)/g)].map((m) => m[1]);
      backgrounds.push({ el: selector(el), urls });
    }

    // Boxes that may be the slide (html, body, large top-level containers), with their computed size:
    // `sized` when the height is not left to the content (any length, var() or calc) or an aspect ratio
    // sets it; `outside` lists the content items not inside the box (then it is a column, not a slide).
    const sized = (el) => {
      const m = el.computedStyleMap();
      if (String(m.get("aspect-ratio")) !== "auto") return true;
      const h = m.get("height");
      if (String(h) === "auto") return false;
      // A percentage of a parent sized by its content is sized by the content too.
      return !(h instanceof CSSUnitValue && h.unit === "percent") || el === html || sized(el.parentElement);
    };
    const large = (el) => {
      if (el.matches(MEDIA)) return false;
      const r = el.getBoundingClientRect();
      return Math.min(r.width / width, r.height / height) >= 0.5;
    };
    const frames = [];
    const tops = [...body.children].filter((c) => !SKIP.has(c.tagName) && large(c));
    if (body.children.length === 1) tops.push(...[...body.children[0].children].filter(large));
    for (const el of [html, body, ...tops]) {
      const r = el.getBoundingClientRect();
      const out = el === html || el === body ? [] : items.map((it, i) => i).filter((i) => !el.contains(items[i].el));
      frames.push({ el: selector(el), size: [round(r.width), round(r.height)], sized: sized(el), outside: out.slice(0, 20) });
    }

    const scroller = document.scrollingElement || html;
    return {
      slide: [width, height],
      scroll: [scroller.scrollWidth, scroller.scrollHeight],
      rootClips,
      items: items.map(({ el, ...signals }) => ({ el: selector(el), ...signals })),
      clipped, outside, overlaps, texts, images, backgrounds, frames,
      visibleText: texts.filter((t) => t.opacity >= 0.05).reduce((s, t) => s + t.chars, 0),
      visibleMedia: mediaItems.filter((m) => area(meet(m.vis, SLIDE)) >= 64 && !(m.el.tagName === "IMG" && m.el.naturalWidth === 0)).length,
      elements: styles.size,
    };
  };

  try {
    return JSON.stringify(await measure());
  } catch (error) {
    // A page this script cannot handle must not fail the render: report the error, measure nothing.
    return JSON.stringify({
      slide: [width, height], scroll: [width, height], rootClips: true, items: [], clipped: [], outside: [],
      overlaps: [], texts: [], images: [], backgrounds: [], frames: [], visibleText: 1, visibleMedia: 0, elements: 0,
      error: String((error && error.stack) || error),
    });
  }
}
