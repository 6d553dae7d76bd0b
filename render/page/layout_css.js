// Colours, names and paint order of the elements a slide's layout reads (styles: helpers.js).
// Part of slide_layout.js: included into its function, whose scope it shares (render/page_script.py).

const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "TITLE", "META", "LINK", "BR", "WBR"]);
const SHOT_TAGS = new Set(["svg", "CANVAS", "VIDEO", "IFRAME", "OBJECT", "EMBED", "MATH"]);
const INLINE = new Set(["inline", "contents"]);
// What Chromium draws from the colour emoji font: emoji-presentation characters and sequences.
const EMOJI_SRC = "(?:\\p{Regional_Indicator}{2}|(?:\\p{Emoji_Presentation}|\\p{Extended_Pictographic}\\uFE0F)(?:\\p{Emoji_Modifier}|\\uFE0F|\\u200D\\p{Extended_Pictographic}\\uFE0F?)*)";
const EMOJI = new RegExp(EMOJI_SRC, "gu");
const EMOJI_SPLIT = new RegExp(`(${EMOJI_SRC})`, "u");
const r2 = (v) => Math.round(v * 100) / 100;
const rect = (r) => [r2(r.left), r2(r.top), r2(r.width), r2(r.height)];

const px = (v) => parseFloat(v) || 0;

// Colours as [hex, alpha]; anything that is not rgb()/rgba() goes through a 1x1 canvas.
const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
const colours = new Map();
const colour = (value) => {
  if (colours.has(value)) return colours.get(value);
  let rgba;
  const m = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(value);
  if (m) rgba = [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : +m[4]];
  else {
    probe.clearRect(0, 0, 1, 1);
    probe.fillStyle = "rgba(0,0,0,0)";
    probe.fillStyle = value;
    probe.fillRect(0, 0, 1, 1);
    const d = probe.getImageData(0, 0, 1, 1).data;
    rgba = d[3] ? [d[0] * 255 / d[3], d[1] * 255 / d[3], d[2] * 255 / d[3], d[3] / 255] : [0, 0, 0, 0];
  }
  const hex = rgba.slice(0, 3).map((c) => Math.round(Math.min(255, c)).toString(16).padStart(2, "0")).join("");
  const out = [hex, r2(rgba[3])];
  colours.set(value, out);
  return out;
};

// The font's rounded ascent, as Chromium lays text out with it (canvas reports the same metrics).
const ascents = new Map();
const ascent = (s) => {
  const key = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  if (!ascents.has(key)) {
    probe.font = key;
    ascents.set(key, probe.measureText("x").fontBoundingBoxAscent);
  }
  return ascents.get(key);
};

const names = new Map();
const nameOf = (el) => {
  if (!names.has(el)) {
    const tag = el.tagName.toLowerCase();
    names.set(el, el.id ? `${tag}#${el.id}` : el.classList.length ? `${tag}.${el.classList[0]}` : tag);
  }
  return names.get(el);
};

// Paint order, as CSS stacks it (roughly): inside each positioned ancestor's layer, in-flow
// content first, then positioned descendants by z-index, each group in document order.
const order = new Map();
const keys = new Map();
const place = (el) => {
  if (!order.has(el)) order.set(el, order.size);
  return order.get(el);
};
const stackKey = (el) => {
  if (keys.has(el)) return keys.get(el);
  const parent = el.parentElement;
  let layer = [];
  for (let a = parent; a; a = a.parentElement) {
    if (style(a).position !== "static") { layer = stackKey(a); break; }
  }
  const s = style(el);
  const key = s.position !== "static" ? [...layer, s.zIndex === "auto" ? 0 : parseInt(s.zIndex, 10) || 0, 1, place(el)] : null;
  keys.set(el, key || layer);
  return keys.get(el);
};
const items = [];
const shots = [];
const emit = (el, item) => {
  item.key = [...stackKey(el), 0, 0, place(el), items.length];
  item.name = item.name || nameOf(el);
  items.push(item);
  return item;
};

const isIdentity = (t) => t === "none" || /^matrix\(1, 0, 0, 1, [-\d.e]+, [-\d.e]+\)$/.test(t);
const needsShot = (el, s) =>
  SHOT_TAGS.has(el.tagName) || !isIdentity(s.transform) || s.filter !== "none" || s.clipPath !== "none" ||
  (s.maskImage && s.maskImage !== "none") || s.mixBlendMode !== "normal" ||
  (s.backdropFilter && s.backdropFilter !== "none");

const altOf = (el) => {
  const label = el.getAttribute("aria-label") || el.getAttribute("alt") || el.getAttribute("title");
  if (label) return label.trim();
  const title = el.querySelector && el.querySelector("title, desc");
  if (title && title.textContent.trim()) return title.textContent.trim();
  const figure = el.closest && el.closest("figure");
  const caption = figure && figure.querySelector("figcaption");
  if (caption && caption.textContent.trim()) return caption.textContent.trim();
  return "";
};
