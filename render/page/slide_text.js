// The slide as a reader reads it, for the content gate (deck/text.py evaluates it on each printed page).
// Returns a JSON string, in CSS px of the slide:
//   blocks: [{text, box: [x, y, w, h], size, role}] in document order: the text of one block box
//     (a paragraph, a list item, a table cell), of one svg <text>, of one formula (<math>, KaTeX,
//     MathJax) or of one code block (<pre>); size is its largest type;
//   pictures: [[x, y, w, h]] of the images, svgs, canvases and videos (not the furniture's).
// A block's role is what the DOM says of it: heading (h1-h6, role=heading), furniture (in a
// <header>, <footer> or <nav>, or in an element classed footer, page number, logo ..., headings
// excepted), figure (in an svg, canvas, <math>, <figure> (its caption excepted), a formula, or an
// element classed chart, diagram, legend, equation ...), table (in a table; its caption excepted),
// code (in <pre>/<code>, or set in a monospace font), prose otherwise. What repeats at the slide's
// edges across the deck, and bare page numbers, the gate finds itself (filters/content_reading.py).
async ({ width, height, tol }) => {
  await document.fonts.ready;
  window.scrollTo(0, 0);

  // include: helpers.js

  const SKIP = "script, style, noscript, template, title, desc, metadata, defs";
  const WHOLE = "math, .katex, mjx-container, .MathJax, pre"; // read as one block, whatever lies inside
  const HEADING = "h1, h2, h3, h4, h5, h6, [role=heading]";
  const FURNITURE = "header, footer, nav, [role=banner], [role=contentinfo], [role=navigation]";
  const CAPTION = "figcaption, caption";
  const FIGURE = "svg, canvas, math, figure, [role=img], [role=math], [role=figure], .katex, mjx-container, .MathJax, .mermaid";
  const TABLE = "table, [role=table], [role=grid]";
  const CODE = "pre, code, kbd, samp";
  const MONO = /mono|courier|consolas|menlo|monaco/i;
  const FURNITURE_CLASS = /^(?:.*[-_])?(?:footer|page-?(?:num|number|no)|slide-?(?:num|number|no)|pagination|logo|watermark|copyright)(?:[-_].*)?$/i;
  const FIGURE_CLASS = /^(?:.*[-_])?(?:chart|diagram|graph|plot|axis|legend|formula|equation|math|flowchart)(?:[-_].*)?$/i;

  // An element or an ancestor smaller than most of the slide (not the slide's wrapper) has a class
  // or id one of whose words matches `pattern`.
  const classed = (pattern) => {
    const seen = new Map();
    const of = (el) => {
      if (!el || el === body || el === html) return false;
      if (!seen.has(el)) {
        const r = el.getBoundingClientRect();
        const words = `${el.getAttribute("class") || ""} ${el.id}`.split(/\s+/);
        seen.set(el, (r.width * r.height < 0.6 * width * height && words.some((w) => pattern.test(w))) || of(el.parentElement));
      }
      return seen.get(el);
    };
    return of;
  };
  const furnitureClass = classed(FURNITURE_CLASS);
  const figureClass = classed(FIGURE_CLASS);
  const inFurniture = (el) => Boolean(el.closest(FURNITURE)) || furnitureClass(el);

  const roleOf = (block) => {
    const heading = Boolean(block.closest(HEADING));
    if (inFurniture(block) && !heading) return "furniture";
    if (block.closest(CAPTION)) return "prose";
    if (block.closest(FIGURE) || figureClass(block)) return "figure";
    if (block.closest(TABLE)) return "table";
    if (block.closest(CODE) || MONO.test(style(block).fontFamily.split(",")[0])) return "code";
    return heading ? "heading" : "prose";
  };

  const blockOf = (el) => {
    const whole = el.closest(WHOLE);
    if (whole) return whole;
    if (el instanceof SVGElement) return el.closest("text") || el;
    let b = el;
    while (b !== body && ["inline", "contents"].includes(style(b).display)) b = b.parentElement;
    return b;
  };
  // The type size a text node is drawn at: an svg's scale applies to its text.
  const sizeOf = (el) => {
    const m = el instanceof SVGGraphicsElement ? el.getScreenCTM() : null;
    return parseFloat(style(el).fontSize) * (m ? Math.hypot(m.a, m.b) : 1);
  };
  const onSlide = (r) => (r.width > 0 || r.height > 0) && r.right > 0 && r.bottom > 0 && r.left < width && r.top < height;
  const clamp = (l, t, r, b) => {
    const [x, y] = [Math.max(0, l), Math.max(0, t)];
    return [x, y, Math.min(width, r) - x, Math.min(height, b) - y].map((v) => Math.round(v * 10) / 10);
  };

  const found = new Map(); // block -> {parts, l, t, r, b, size}
  const add = (block, text, rects, size) => {
    let f = found.get(block);
    if (!f) found.set(block, (f = { parts: [], l: Infinity, t: Infinity, r: -Infinity, b: -Infinity, size: 0 }));
    f.parts.push(text);
    for (const r of rects) [f.l, f.t, f.r, f.b] = [Math.min(f.l, r.left), Math.min(f.t, r.top), Math.max(f.r, r.right), Math.max(f.b, r.bottom)];
    f.size = Math.max(f.size, size);
  };
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.nodeType === 1 && (n.matches(SKIP) || style(n).display === "none") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType === 1) {
      if (node.tagName === "BR" && found.has(blockOf(node))) add(blockOf(node), "\n", [], 0);
      continue;
    }
    const el = node.parentElement;
    if (!node.data.trim() || style(el).visibility !== "visible" || opacity(el) < 0.05) continue;
    range.selectNodeContents(node);
    const rects = [...range.getClientRects()].filter(onSlide);
    if (rects.length) add(blockOf(el), node.data, rects, sizeOf(el));
  }
  const blocks = [...found].map(([block, f]) => ({
    text: f.parts.join("").replace(/[ \t\r\f]+/g, " ").replace(/ ?\n ?/g, "\n").trim(),
    box: clamp(f.l, f.t, f.r, f.b),
    size: Math.round(f.size * 10) / 10,
    role: roleOf(block),
  }));

  const pictures = [];
  for (const el of body.querySelectorAll("*")) {
    const s = style(el);
    const media = ["IMG", "CANVAS", "VIDEO", "OBJECT", "EMBED", "IFRAME"].includes(el.tagName)
      || (el.tagName === "svg" && !el.parentElement.closest("svg"));
    if (!(media || s.backgroundImage.includes("url(")) || s.visibility !== "visible" || opacity(el) < 0.05 || inFurniture(el)) continue;
    if (el.tagName === "IMG" && !(el.complete && el.naturalWidth)) continue;
    const r = el.getBoundingClientRect();
    if (onSlide(r)) pictures.push(clamp(r.left, r.top, r.right, r.bottom));
  }
  return JSON.stringify({ size: [width, height], blocks, pictures });
}
