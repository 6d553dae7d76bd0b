// Hides the text boxes that measure.js found over charts (`hide` true), or shows them again, so that a
// capture in between shows the charts' own pixels beneath them (render/renderer.py). `visibility` keeps
// the layout and, unlike opacity, starts no visible transition when shown again.
(hide) => {
  const key = Symbol.for("deckforge.covers");
  const mark = "data-deckforge-cover";
  const sheet = document.getElementById(mark);
  if (sheet) sheet.remove();
  for (const el of document.querySelectorAll(`[${mark}]`)) el.removeAttribute(mark);
  if (!hide) return;
  for (const el of window[key] || []) el.setAttribute(mark, "");
  const css = document.createElement("style");
  css.id = mark;
  css.textContent = `[${mark}], [${mark}] * { visibility: hidden !important; transition: none !important; }`;
  (document.head || document.documentElement).appendChild(css);
}
