// The precomputed explorers: two range inputs step through pictures rendered when the site was built
// (site/explorers.py); moving one swaps the picture, the values line and the readout together.
(function () {
  "use strict";
  function start(box) {
    const data = JSON.parse(box.querySelector("script.explorer-data").textContent);
    const base = box.dataset.base;
    const img = box.querySelector("img.explorer-picture");
    const values = box.querySelector(".explorer-values");
    const readout = box.querySelector(".explorer-readout");
    const inputs = { d: box.querySelector('input[name="d"]'), n: box.querySelector('input[name="n"]') };
    let preloaded = false;
    function preload() {  // all pictures of this explorer into the cache, once, when it is first used
      if (preloaded) return;
      preloaded = true;
      for (const picture of Object.values(data.pictures)) {
        const image = new Image();
        image.src = base + picture.src;
      }
    }
    function show() {
      const d = data.d[inputs.d.valueAsNumber], n = data.n[inputs.n.valueAsNumber];
      const picture = data.pictures[d + "," + n];
      inputs.d.nextElementSibling.textContent = d;
      inputs.n.nextElementSibling.textContent = n;
      img.src = base + picture.src;
      img.alt = picture.alt;  // the section's describing function, for these values (site/explorers.py)
      img.dataset.key = d + "," + n;
      img.classList.toggle("explorer-stale", Boolean(picture.error));
      values.textContent = "d = " + d + ", n = " + n + " (precomputed)";
      readout.textContent = picture.error ? "Cannot show this: " + picture.error : picture.readout;
    }
    for (const input of Object.values(inputs)) {
      input.addEventListener("input", show);
      input.addEventListener("pointerdown", preload);
      input.addEventListener("focus", preload);
    }
    box.addEventListener("pointerenter", preload);
    box.classList.add("explorer-live");
  }
  function startAll() { document.querySelectorAll(".attnbook-explorer.explorer-ready").forEach(start); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startAll);
  else startAll();
})();
