// In-page measurement of one rendered slide (render/inspection.py evaluates it once per render).
// Returns a JSON string (one string crosses the Playwright protocol far cheaper than a deep object):
// boxes in CSS px as [left, top, right, bottom]. It measures and reports signals; render/defects/
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

    const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "TITLE", "META", "LINK"]);
    const MEDIA = "img, svg, canvas, video, iframe, object, embed, table";
    const SHAPES = "path, rect, circle, ellipse, line, polyline, polygon, image, use";

    // include: helpers.js

    // include: measure_geometry.js

    // include: measure_ink.js

    // Signals of decoration a reviewer uses (render/defects/decoration.py weighs them).
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

    // include: measure_overlaps.js

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
