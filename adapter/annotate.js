// ComputerOps page annotation, evaluated in the page by adapter/driver.py.
//
// Walks the LIVE DOM (same-origin iframes and open shadow roots included) and returns the HTML of
// a CLONE that holds only visible content, with each visible interactive control marked by
// data-co-* attributes. The live page's DOM is never changed; the only state kept in the page is
// window.__computerops: element -> id (so an element keeps its id across observations), id ->
// element (for the driver to act on), and which controls the user has touched (for validation).
//
// What is offered is checked against Chromium's accessibility tree by adapter/fidelity.py (tests in
// tests/test_adapter_fidelity.py). Deliberate differences from that tree:
// - a control clipped to nothing by a zero-size overflow:hidden ancestor is left out (Chromium keeps
//   it, but no one can see or click it);
// - a control entirely left of or above the document's origin (a skip link at left:-9999px) is left
//   out (fidelity.py leaves it out too: it is outside the page's scrollable area);
// - closed shadow roots cannot be walked, so their controls are missing;
// - a link with no name at all is named by its target, so the model can tell such links apart.
() => {
  const SKIP = new Set([
    "script", "style", "template", "noscript", "head", "meta", "link", "title", "base", "datalist",
    "svg", "math", "canvas", "video", "audio", "object", "embed", "img", "picture", "hr", "wbr",
  ]);
  // Mirrors BLOCK_TAGS in adapter/render.py; other elements laid out as blocks get data-co-block.
  const BLOCK_TAGS = new Set([
    "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "legend", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
  ]);
  const ARIA_INTERACTIVE = new Set([
    "button", "link", "checkbox", "radio", "switch", "tab", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "textbox", "searchbox", "combobox", "listbox", "slider", "spinbutton",
    "treeitem",
  ]);
  const ARIA_CHECKABLE = new Set(["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"]);
  const BUTTON_INPUTS = new Set(["button", "submit", "reset", "image", "file"]);
  const BLOCKISH = /^(block|flex|grid|list-item|table|flow-root)/;

  const co = window.__computerops || (window.__computerops = {
    ids: new WeakMap(), byId: new Map(), next: 1, touched: new WeakSet(), listened: new WeakSet(),
    token: Math.random().toString(36).slice(2),
  });
  co.byId = new Map();
  const out = document.implementation.createHTMLDocument("");
  const offerCache = new Map();

  const clean = (s) => (s || "").replace(/\s+/g, " ").trim();

  // Touched controls: those the user typed into or changed, or that failed a submit attempt.
  function listen(doc) {
    if (co.listened.has(doc)) return;
    co.listened.add(doc);
    for (const type of ["input", "change", "invalid"]) {
      doc.addEventListener(type, (e) => co.touched.add(e.composedPath()[0]), true);
    }
  }

  // Hidden with everything inside it. The `hidden` attribute counts only through the display it
  // implies (a page may override it), visibility:hidden is handled in visit() (a descendant may be
  // visible again), and content-visibility:hidden hides only an element's contents (checkVisibility
  // is false for them).
  function isHidden(el) {
    if (el.inert) return true;
    if (el.getAttribute("aria-hidden") === "true") return true;
    const style = getComputedStyle(el);
    if (style.display === "none") return true;
    if (style.display === "contents") return false;
    // Catches content of closed <details> and other boxes the browser does not render.
    if (typeof el.checkVisibility === "function" && !el.checkVisibility()) return true;
    const r = el.getBoundingClientRect();
    const clips = /(hidden|clip)/.test(style.overflow);
    if ((r.width === 0 || r.height === 0) && clips) return true;
    return r.width === 0 && r.height === 0 && el.children.length === 0 && !el.textContent.trim();
  }

  function isInvisible(el) {
    return /^(hidden|collapse)$/.test(getComputedStyle(el).visibility);
  }

  // A box entirely left of or above the document's origin (a skip link at left:-9999px): nobody can
  // scroll to it, see it or click it, so such a control is not offered. Content far down or right
  // is offered: scrolling reaches it.
  function isOffPage(el) {
    const box = el.getBoundingClientRect();
    const view = el.ownerDocument.defaultView;
    return box.width > 0 && box.height > 0 && (box.right + view.scrollX <= 0 || box.bottom + view.scrollY <= 0);
  }

  function roleOf(el) {
    const tag = el.localName;
    const explicit = (el.getAttribute("role") || "").trim().split(/\s+/)[0];
    if (ARIA_INTERACTIVE.has(explicit)) return explicit;
    switch (tag) {
      case "a": case "area": return el.hasAttribute("href") ? "link" : null;
      case "button": case "summary": return "button";
      case "select": return el.multiple || el.size > 1 ? "listbox" : "combobox";
      case "textarea": return "textbox";
      case "input": {
        const type = el.type;
        if (type === "hidden") return null;
        if (BUTTON_INPUTS.has(type)) return "button";
        if (type === "checkbox" || type === "radio") return type;
        if (type === "number") return "spinbutton";
        if (type === "range") return "slider";
        if (type === "search") return "searchbox";
        return el.list ? "combobox" : "textbox";
      }
    }
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return "textbox";
    return null;
  }

  function isOffered(el) {
    if (offerCache.has(el)) return offerCache.get(el);
    let offered = roleOf(el) !== null;
    if (offered) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) offered = false;  // no box: cannot be clicked or typed into
    }
    if (offered) {
      const modal = el.ownerDocument.querySelector("dialog:modal");
      if (modal && !modal.contains(el)) offered = false;  // a modal dialog makes the rest inert
    }
    offerCache.set(el, offered);
    return offered;
  }

  // For label lookahead: is a control elsewhere on the page visible and offered?
  function isVisibleControl(el) {
    if (!el || !isOffered(el) || isHidden(el) || isInvisible(el) || isOffPage(el)) return false;
    if (el.closest("[aria-hidden=true],[inert]")) return false;
    return typeof el.checkVisibility !== "function" || el.checkVisibility({ visibilityProperty: true });
  }

  function idFor(el) {
    let id = co.ids.get(el);
    if (!id) {
      id = String(co.next++);
      co.ids.set(el, id);
    }
    co.byId.set(id, el);
    return id;
  }

  function textWithoutControls(node) {
    const copy = node.cloneNode(true);
    copy.querySelectorAll("select,textarea,input,script,style,[aria-hidden=true],[hidden]")
      .forEach((n) => n.remove());
    return clean(copy.textContent);
  }

  // Rendered text of an element, without what aria-hidden takes out of the accessibility tree.
  function renderedText(el) {
    if (!el.querySelector("[aria-hidden=true]")) return el.innerText;
    let text = "";
    for (const child of el.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) text += child.data;
      else if (child.localName === "br") text += " ";
      else if (child.nodeType === Node.ELEMENT_NODE && child.getAttribute("aria-hidden") !== "true"
               && !SKIP.has(child.localName) && child.checkVisibility({ visibilityProperty: true })) {
        text += BLOCKISH.test(getComputedStyle(child).display) ? ` ${renderedText(child)} ` : renderedText(child);
      }
    }
    return text;
  }

  function contentName(el) {
    const text = clean(renderedText(el));
    if (text) return text;
    for (const n of el.querySelectorAll("img[alt],[aria-label]:not([aria-hidden=true]),svg title")) {
      const t = clean(n.localName === "img" ? n.alt : n.getAttribute("aria-label") || n.textContent);
      if (t) return t;
    }
    return "";
  }

  function nameOf(el, role) {
    const tag = el.localName;
    const labelledBy = el.getAttribute("aria-labelledby");
    if (labelledBy) {
      const root = el.getRootNode();
      const parts = labelledBy.split(/\s+/).map((id) => (root.getElementById ? root.getElementById(id)
        : el.ownerDocument.getElementById(id))).filter(Boolean).map((n) => clean(n.textContent));
      const text = clean(parts.join(" "));
      if (text) return text;
    }
    const ariaLabel = clean(el.getAttribute("aria-label"));
    if (ariaLabel) return ariaLabel;
    if (tag === "input" && BUTTON_INPUTS.has(el.type)) {
      if (el.type === "image") return clean(el.alt) || clean(el.value) || "Submit";
      if (el.type === "file") return clean(labelsText(el)) || clean(el.title) || "Choose file";
      return clean(el.value) || { submit: "Submit", reset: "Reset" }[el.type] || clean(el.title);
    }
    const fromLabels = labelsText(el);
    if (["input", "select", "textarea"].includes(tag) && fromLabels) return fromLabels;
    if (tag !== "input" && tag !== "select" && tag !== "textarea" && !el.isContentEditable) {
      const text = contentName(el);
      if (text) return text;
    }
    if (fromLabels) return fromLabels;
    const fallback = clean(el.getAttribute("title")) || clean(el.getAttribute("placeholder"));
    if (fallback) return fallback;
    if (role === "link") return hrefOf(el) || "";
    return "";
  }

  function labelsText(el) {
    return el.labels ? clean([...el.labels].map(textWithoutControls).join(" ")) : "";
  }

  function hrefOf(el) {
    try {
      const url = new URL(el.href, el.baseURI);
      return url.origin === location.origin ? url.pathname + url.search + url.hash : url.href;
    } catch (e) {
      return el.getAttribute("href");
    }
  }

  function optionsOf(select) {
    return [...select.options]
      .filter((o) => !o.hidden && !o.disabled && !(o.parentElement.localName === "optgroup" && o.parentElement.disabled))
      .map((o) => clean(o.label));
  }

  function mark(el, c, role) {
    const tag = el.localName;
    c.setAttribute("data-co-id", idFor(el));
    c.setAttribute("data-co-role", role);
    c.setAttribute("data-co-name", nameOf(el, role));
    let value = null;
    let checked = null;
    if (tag === "input" && (el.type === "checkbox" || el.type === "radio")) {
      checked = el.checked;
    } else if (ARIA_CHECKABLE.has(role)) {
      checked = ["true", "mixed"].includes(el.getAttribute("aria-checked"));
    } else if (tag === "input" && el.type === "file") {
      const names = [...(el.files || [])].map((f) => f.name).join(", ");
      if (names) value = names;
    } else if (tag === "input" && !BUTTON_INPUTS.has(el.type)) {
      value = el.value;
    } else if (tag === "textarea") {
      value = el.value;
    } else if (tag === "select") {
      value = [...el.selectedOptions].map((o) => clean(o.label)).join(", ");
      c.setAttribute("data-co-options", JSON.stringify(optionsOf(el)));
    } else if (el.isContentEditable) {
      value = el.innerText.trim();
    } else if (el.hasAttribute("aria-valuenow") || el.hasAttribute("aria-valuetext")) {
      value = el.getAttribute("aria-valuetext") || el.getAttribute("aria-valuenow");
    }
    if (value !== null) c.setAttribute("data-co-value", value);
    if (checked !== null) c.setAttribute("data-co-checked", String(checked));
    if (el.required || el.getAttribute("aria-required") === "true") c.setAttribute("data-co-required", "");
    let disabled = el.getAttribute("aria-disabled") === "true";
    try { disabled = disabled || el.matches(":disabled"); } catch (e) { /* not a form control */ }
    if (disabled) c.setAttribute("data-co-disabled", "");
    if (el.readOnly === true || el.getAttribute("aria-readonly") === "true") c.setAttribute("data-co-readonly", "");
    if (el.willValidate && el.validity && !el.validity.valid) {
      let userInvalid = co.touched.has(el);
      try { userInvalid = userInvalid || el.matches(":user-invalid"); } catch (e) { /* old browser */ }
      if (userInvalid && el.validationMessage) {
        // A browser shows the title beside "Please match the requested format."; the model needs it too.
        const hint = el.validity.patternMismatch && clean(el.title) ? ` (${clean(el.title)})` : "";
        c.setAttribute("data-co-validation", el.validationMessage + hint);
      }
    }
    if (role === "link" && el.hasAttribute("href")) c.setAttribute("data-co-href", hrefOf(el));
  }

  function childrenOf(node) {
    if (node.shadowRoot) return node.shadowRoot.childNodes;
    if (node.localName === "slot") {
      const assigned = node.assignedNodes({ flatten: true });
      return assigned.length ? assigned : node.childNodes;
    }
    return node.childNodes;
  }

  // Text shows only where its parent is visible; elements decide for themselves in visit().
  function walkChildren(node, into, textShown) {
    for (const child of childrenOf(node)) {
      if (child.nodeType === Node.TEXT_NODE) {
        if (child.data && textShown) into.appendChild(out.createTextNode(child.data));
      } else if (child.nodeType === Node.ELEMENT_NODE) {
        visit(child, into);
      }
    }
  }

  function visit(el, into) {
    const tag = el.localName;
    if (SKIP.has(tag) || isHidden(el)) return;
    const invisible = isInvisible(el);
    if (tag === "iframe" || tag === "frame") {
      let doc = null;
      try { doc = el.contentDocument; } catch (e) { /* cross-origin */ }
      if (doc && doc.body && !invisible) {
        listen(doc);
        const frame = into.appendChild(out.createElement("div"));
        frame.setAttribute("data-co-frame", "");
        walkChildren(doc.body, frame, !isInvisible(doc.body));
      }
      return;
    }
    const role = roleOf(el);
    if (role && !invisible && isOffPage(el)) return;
    const c = into.appendChild(out.createElement(/^[a-z][a-z0-9-]*$/.test(tag) ? tag : "span"));
    if (!BLOCK_TAGS.has(tag) && BLOCKISH.test(getComputedStyle(el).display)) c.setAttribute("data-co-block", "");
    if (invisible) {
      // visibility:hidden: neither this element nor its text shows, but a descendant may set visible.
      if (tag !== "select" && tag !== "textarea" && tag !== "option" && tag !== "optgroup") walkChildren(el, c, false);
      if (!c.textContent.trim() && !c.querySelector("[data-co-id]")) c.remove();
      return;
    }
    if (role && isOffered(el)) {
      mark(el, c, role);
      if (tag === "input" || tag === "select" || tag === "textarea" || el.isContentEditable) return;
    } else if (tag === "label" && el.control && isVisibleControl(el.control)) {
      // The label's text is the control's name; the renderer can leave it out.
      c.setAttribute("data-co-label-for", idFor(el.control));
    } else if (tag === "select" || tag === "textarea" || tag === "option" || tag === "optgroup") {
      return;
    }
    if (tag === "br") return;
    walkChildren(el, c, true);
  }

  listen(document);
  const root = out.createElement("body");
  const start = document.body || document.documentElement;
  walkChildren(start, root, !isInvisible(start));
  return root.outerHTML;
}
