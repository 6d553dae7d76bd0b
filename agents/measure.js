// In-page measurement of one rendered slide (agents/inspection.py evaluates it once per render).
// Returns a JSON string (one string crosses the Playwright protocol far cheaper than a deep object):
// boxes in CSS px as [left, top, right, bottom]; Python turns it into defects.
async ({ width, height, tol, minSide }) => {
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
    const MEDIA = new Set(["IMG", "SVG", "CANVAS", "VIDEO", "IFRAME", "OBJECT", "EMBED", "TABLE"]);
    const ABSOLUTE_UNIT = /^-?[\d.]+(px|pt|pc|cm|mm|in|q)$/i;

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
    const clipsX = (s) => s.overflowX !== "visible";
    const clipsY = (s) => s.overflowY !== "visible";
    const rootClips = clipsX(style(html)) || clipsY(style(html)) || clipsX(style(body)) || clipsY(style(body));
    const propagates = (el) => el === html || (el === body && !clipsX(style(html)) && !clipsY(style(html)));
    const coversSlide = (r) => r.l <= tol && r.t <= tol && r.r >= width - tol && r.b >= height - tol;

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
          const l = r.left + a.clientLeft, t = r.top + a.clientTop;
          const pad = { l: clipsX(s) ? l : -Infinity, t: clipsY(s) ? t : -Infinity,
            r: clipsX(s) ? l + a.clientWidth : Infinity, b: clipsY(s) ? t + a.clientHeight : Infinity };
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

    // Background layers: full-slide boxes, faint decoration, boxes behind the page (negative z-index),
    // and absolutely positioned boxes that fill their container (a card's picture under its caption).
    const isBackground = (el, rect) => {
      if (area(meet(rect, SLIDE)) >= 0.9 * width * height) return true;
      if (opacity(el) <= 0.3) return true;
      const parent = el.parentElement;
      if (["absolute", "fixed"].includes(style(el).position) && parent) {
        const container = fromDom(parent.getBoundingClientRect());
        if (area(container) > 0 && area(meet(fromDom(el.getBoundingClientRect()), container)) >= 0.9 * area(container)) return true;
      }
      for (let a = el; a && a !== html; a = a.parentElement) {
        const s = style(a);
        if (s.position !== "static" && parseInt(s.zIndex, 10) < 0) return true;
      }
      return false;
    };

    // Text: runs (per parent element: colour and size for contrast) and blocks (per nearest block box:
    // clipping, overflow, overlap). Rects are narrowed to the font-size band: line boxes of tall fonts
    // (CJK) reach beyond the glyphs and would touch their neighbours.
    const runs = new Map();
    const blocks = new Map();
    const blockOf = (el) => {
      let b = el;
      while (b !== body && ["inline", "contents"].includes(style(b).display)) b = b.parentElement;
      return b;
    };
    const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.data.trim();
      const parent = node.parentElement;
      if (!text || !parent || SKIP.has(parent.tagName) || parent.closest("svg, noscript, template")) continue;
      const s = style(parent);
      if (s.visibility !== "visible" || opacity(parent) < 0.05) continue;
      range.selectNodeContents(node);
      const fs = parseFloat(s.fontSize);
      const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0).map((r) => {
        const band = Math.min(r.height, fs);
        const top = r.top + (r.height - band) / 2;
        return { l: r.left, t: top, r: r.right, b: top + band };
      });
      if (!rects.length) continue;
      if (!runs.has(parent)) {
        runs.set(parent, { el: parent, rects: [], text: "", style: s });
      }
      const run = runs.get(parent);
      run.rects.push(...rects);
      run.text += text;
      const block = blockOf(parent);
      if (!blocks.has(block)) blocks.set(block, { el: block, rects: [] });
      blocks.get(block).rects.push(...rects);
    }

    const textItems = [...blocks.values()].map((b) => {
      const clip = clipOf(b.el, true);
      const visible = b.rects.map((r) => meet(r, clip.rect)).filter((r) => area(r) > 0);
      return { ...b, clip, visible, bbox: union(b.rects) };
    });

    const mediaItems = [];
    for (const el of body.querySelectorAll("img, svg, canvas, video, iframe, object, embed, table")) {
      if (el.tagName.toUpperCase() === "SVG" && el.parentElement && el.parentElement.closest("svg")) continue;
      if (!MEDIA.has(el.tagName.toUpperCase())) continue;
      const s = style(el);
      if (s.visibility !== "visible" || opacity(el) < 0.05) continue;
      const rect = fromDom(el.getBoundingClientRect());
      if (area(rect) < 1) continue;
      const clip = clipOf(el, false);
      const vis = meet(rect, clip.rect);
      if (area(vis) < 1) continue;
      mediaItems.push({ el, rect, visible: [vis], bbox: vis, background: isBackground(el, vis) });
    }

    // Clipped text, and content past the slide edge.
    const clipped = [];
    const outside = [];
    const reported = [];
    for (const item of mediaItems) {
      const past = beyond(item.bbox, SLIDE);
      if (!item.background && Math.max(...past) > tol) {
        outside.push({ el: selector(item.el), kind: item.el.tagName.toLowerCase(), box: box(item.rect), past, text: false });
        reported.push(item.el);
      }
    }
    for (const item of textItems) {
      if (reported.some((m) => m.contains(item.el))) continue;
      const cutter = item.clip.clippers.find((c) => Math.max(...beyond(item.bbox, c.pad)) > tol);
      if (cutter) {
        clipped.push({ el: selector(item.el), by: selector(cutter.el), box: box(item.bbox), hidden: beyond(item.bbox, cutter.pad) });
        continue;
      }
      if (!item.visible.length) continue;
      const visible = union(item.visible);
      const past = beyond(visible, SLIDE);
      if (Math.max(...past) <= tol) continue;
      if (item.clip.edge) clipped.push({ el: selector(item.el), by: "slide edge", box: box(item.bbox), hidden: past });
      else outside.push({ el: selector(item.el), kind: "text", box: box(visible), past, text: true });
    }

    // Overlaps between content items that are not background layers nor DOM relatives.
    const items = [
      ...textItems.filter((t) => t.visible.length).map((t) => ({ el: t.el, rects: t.visible, text: true,
        background: isBackground(t.el, union(t.visible)) })),
      ...mediaItems.map((m) => ({ el: m.el, rects: m.visible, text: false, background: m.background })),
    ].filter((i) => !i.background).slice(0, 600);
    for (const i of items) { i.area = i.rects.reduce((s, r) => s + area(r), 0); i.bbox = union(i.rects); }
    const overlaps = [];
    for (let x = 0; x < items.length; x++) {
      for (let y = x + 1; y < items.length; y++) {
        const a = items[x], b = items[y];
        if (area(meet(a.bbox, b.bbox)) <= 0 || a.el.contains(b.el) || b.el.contains(a.el)) continue;
        let shared = 0;
        let hit = null;
        for (const ra of a.rects) for (const rb of b.rects) {
          const m = meet(ra, rb);
          if (m.r - m.l >= minSide && m.b - m.t >= minSide) { shared += area(m); hit = hit ? union([hit, m]) : m; }
        }
        if (!shared) continue;
        overlaps.push({ a: selector(a.el), b: selector(b.el), text: [a.text, b.text], area: round(shared),
          smaller: round(Math.min(a.area, b.area)), box: box(hit) });
      }
    }

    // Text runs for contrast and blank checks (visible part inside the slide only).
    const texts = [];
    for (const run of runs.values()) {
      const s = run.style;
      const visible = run.rects.map((r) => meet(meet(r, clipOf(run.el, true).rect), SLIDE)).filter((r) => area(r) > 0);
      if (!visible.length) continue;
      texts.push({
        el: selector(run.el), rects: visible.slice(0, 40).map(box), color: s.color, opacity: Math.round(opacity(run.el) * 100) / 100,
        size: parseFloat(s.fontSize), weight: parseInt(s.fontWeight, 10) || 400, chars: run.text.length,
        letters: /[\p{L}\p{N}]/u.test(run.text),
        fill: s.webkitTextFillColor, shadow: s.textShadow !== "none" || parseFloat(s.webkitTextStrokeWidth) > 0,
        blend: s.mixBlendMode !== "normal" || s.filter !== "none",
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

    // Boxes that declare the page size (html, body, and the large top-level containers).
    const declared = (el, prop) => {
      let value = el.style.getPropertyValue(prop);
      if (value) return value;
      for (const sheet of document.styleSheets) {
        let rules;
        try { rules = sheet.cssRules; } catch (e) { continue; }
        const stack = [...rules];
        while (stack.length) {
          const rule = stack.shift();
          if (rule.cssRules && rule.media) { if (matchMedia(rule.media.mediaText).matches) stack.unshift(...rule.cssRules); continue; }
          if (rule.selectorText && rule.style.getPropertyValue(prop)) {
            let hit = false;
            try { hit = el.matches(rule.selectorText); } catch (e) { hit = false; }
            if (hit) value = rule.style.getPropertyValue(prop);
          }
        }
      }
      return value;
    };
    const frames = [];
    // A page box spans the slide in one direction at least; pictures and banners are not page boxes.
    const large = (el) => {
      if (MEDIA.has(el.tagName.toUpperCase())) return false;
      const r = el.getBoundingClientRect();
      const w = r.width / width, h = r.height / height;
      return Math.min(w, h) >= 0.5 && Math.max(w, h) >= 0.9;
    };
    const candidates = [html, body, ...[...body.children].filter((c) => !SKIP.has(c.tagName) && large(c))];
    if (body.children.length === 1) candidates.push(...[...body.children[0].children].filter(large));
    for (const el of candidates) {
      const r = el.getBoundingClientRect();
      const w = declared(el, "width"), h = declared(el, "height");
      const fixed = ABSOLUTE_UNIT.test(w.trim()) && (ABSOLUTE_UNIT.test(h.trim()) || declared(el, "aspect-ratio") !== "");
      frames.push({ el: selector(el), size: [round(r.width), round(r.height)], fixed });
    }

    const scroller = document.scrollingElement || html;
    return {
      slide: [width, height],
      scroll: [scroller.scrollWidth, scroller.scrollHeight],
      rootClips,
      clipped, outside, overlaps, texts, images, backgrounds, frames,
      visibleText: texts.filter((t) => t.opacity >= 0.05).reduce((s, t) => s + t.chars, 0),
      visibleMedia: mediaItems.filter((m) => area(meet(m.bbox, SLIDE)) >= 64 && !(m.el.tagName === "IMG" && m.el.naturalWidth === 0)).length,
      elements: styles.size,
    };
  };

  try {
    return JSON.stringify(await measure());
  } catch (error) {
    // A page this script cannot handle must not fail the render: report the error, measure nothing.
    return JSON.stringify({
      slide: [width, height], scroll: [width, height], rootClips: true, clipped: [], outside: [], overlaps: [],
      texts: [], images: [], backgrounds: [], frames: [], visibleText: 1, visibleMedia: 0, elements: 0,
      error: String((error && error.stack) || error),
    });
  }
}
