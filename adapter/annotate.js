// ComputerOps page annotation, run by adapter/driver.py in ComputerOps' own isolated JavaScript world
// (adapter/world.py): page script cannot see or replace the functions and prototypes used here.
// One file (over 400 lines): it is evaluated as one function expression in that world, where there are no modules
// and no bundler, and its helpers are closures over one walk's state (the limits, the cut, the ids, the listeners).
//
// Walks the LIVE DOM (same-origin iframes and open shadow roots included) and returns the HTML of
// a CLONE that holds only visible content, with each visible interactive control marked by
// data-co-* attributes. The live page's DOM is never changed; the only state kept is the isolated
// world's window.__computerops: element -> id (so an element keeps its id across observations),
// id -> element (for the driver to act on), and which controls the user has touched (for validation).
//
// `listening` (a Map node -> "activation" | "pointer") names the elements, documents, shadow roots
// and the top window with their own click, mousedown or mouseup ("activation") or only pointerdown/
// pointerup ("pointer") listeners, as Chromium reports them (adapter/world.py). Besides the controls
// with a role, the annotation offers:
// - `clickable`: a role-less element (div, span, li, td, img, an SVG shape...) with such a listener,
//   or the outermost element of a run of `cursor:pointer` (its parent's cursor is not pointer) when a
//   click there reaches a listener (on an ancestor, its document or the window: delegation). Not
//   offered when hidden, inert, aria-hidden, without size, left of or above the page, behind a modal
//   dialog, covered at its centre (the driver clicks there; only hit-tested where the centre shows: one
//   outside the window, or cut off by a box that scrolls, a row below the visible part of a list, is
//   scrolled into view by the driver before it clicks, so it is offered; one cut off by overflow:clip
//   is not), inside an offered control or a label of one, or when it is <html>/<body> (delegation
//   there must not make everything clickable). A listening element holding exactly one
//   pointer-styled clickable and nothing else offered takes its place (an icon inside a handler's
//   element). A listening element holding other offered controls (or shown labels of them) is a
//   target of its own, offered beside them, when a point of it is its own (ownPoint: its centre, else
//   one of a few along and beside its middle line; the driver clicks there): in no box of what it
//   holds that is, or holds, an offered control (a list row whose title is at its centre, beside its
//   star and delete icons, or whose pin icon sits at its centre; a post in a feed beside its buttons).
//   Otherwise it is a delegating container and only they are offered: a list whose items are
//   offered, an app's root listening for every click, a backdrop around a dialog all have a control,
//   or a part holding controls, at every such point. A clickable keeps its text as its name, without the text of the
//   offered controls inside it; a long one (over CLICKABLE_NAME characters), or a table row or cell, is
//   offered by a marker at its start (first cell), so that its text and the table stay page text.
//   Chromium's accessibility tree has no such nodes: fidelity.py judges them by their listeners.
// - `clickable` too: a role-less element the page made focusable (tabindex 0 or more) under a
//   listening ancestor element, holding no offered control: a custom slider's handle inside its
//   listening track (with role=slider it is a slider). Keys of `press` go to it; the track is
//   offered beside it only by the rule above (its centre is not on the handle).
// - `<canvas>` with listeners (or the outermost pointer under one), as a clickable named by its
//   aria-label, title or fallback content, else nameless: a click at a point of it is how it is
//   used. Its fallback content is not page text. A terminal widget's hidden typing sink (xterm.js's
//   textarea at no size, far left) is not offered, like any visually hidden control without a label
//   that shows: its screen is offered (a clickable, named by its text), a click there focuses the
//   sink, and keys pressed on the screen then reach it (fidelity-canvas.html).
// - `clickable` too (issue 50): a role-less element whose only listeners are for the pointer passing over it
//   (kind "hover"), holding no control, as a target of `hover` (inside a listening element, that one instead); each
//   item of a list that drags its items or listens for the pointer passing over them (dragsItems), at its own
//   point, instead of the list; an element marked draggable="true".
// - `<a>` without href but with an activation listener: a link, as in Chromium's tree.
// - <img> and <svg> with an interactive role, SVG <a> links, SVG shapes with listeners, named by
//   aria-labelledby, aria-label, alt, the SVG <title> child, then their SVG text.
//
// What is offered is checked against Chromium's accessibility tree by adapter/fidelity.py (tests in
// tests/test_adapter_fidelity.py). Deliberate differences from that tree:
// - a control clipped to nothing by a zero-size overflow:hidden ancestor is left out (Chromium keeps
//   it, but no one can see or click it);
// - a control entirely left of or above the document's origin (a skip link at left:-9999px) is left
//   out (fidelity.py leaves it out too: it is outside the page's scrollable area);
// - closed shadow roots cannot be walked, so their controls are missing;
// - while a modal dialog is open (a <dialog> opened with showModal(), even one CSS hid without close(), or a dialog
//   marked aria-modal="true" that shows, in the document or an open shadow root: activeModal), the page behind it is
//   left out, its text too, as assistive technology has it (a frame's modal, the frame's page only). Chromium's
//   tree leaves out what a native modal dialog makes inert, but keeps the page behind an aria-modal one;
// - a control under a box fixed over the window or stuck in a box that scrolls (a cookie banner, a grid's sticky
//   header) is offered when another point of it shows (the driver clicks there) or a scroll of a box that scrolls it,
//   or of the window, clears it (the driver scrolls first); one nothing clears is offered marked covered
//   (markCovered);
// - a link with no name at all is named by its target, so the model can tell such links apart;
// - a visually hidden control (its box at most 1x1 px, or clipped to nothing: the "sr-only"
//   pattern) is offered only when a label of it shows, and is named by it: clicking that label is
//   how a person reaches it, and the driver clicks there. Without one (a custom widget's hidden
//   typing sink, usually nameless) it is left out: nobody can see or click it, and the widget that
//   shows is offered instead. Chromium keeps such controls;
// - a native checkbox or radio styled away to no size behind a custom widget (opacity 0, width and
//   height 0) is offered, named by its label, when that label shows, for the same reason (Chromium
//   keeps it too, but with no box, which fidelity.py does not count). A transparent control that
//   keeps its size (a select with opacity 0 over a fake one) is offered as Chromium has it: a click
//   there reaches it. A control hidden by display:none, aria-hidden or inert is never offered,
//   whatever widget mirrors it: that widget is offered as what it is (a combobox, a clickable).
//
// Text nobody sees is neither page text nor part of a name or label: text at font-size 0 or in a
// transparent colour (not gradient text, whose background is clipped to it), and all text under an
// element at opacity 0 or whose first-line indent moves its text out of its own clipping box (image
// replacement). Controls there are still offered by the rules above (a transparent select over a fake
// one); only their text is unseen.
//
// Names: a role-less target is named by its title before its content (Chromium's rule for a generic element). A
// control the page leaves nameless whose role is an icon-only target's (GUESSED_ROLES; never a form field) is named
// by a guess, marked as one (data-co-name-from, shown `name-from=file`, `=class` or `=id` after the name:
// adapter/observation.py): its image's file name (an <img>, an SVG <use>, a CSS background image, its own or inside
// it), else its class or its icon's (`fa fa-trash-can`: "trash-can"; a class its siblings share is passed over),
// else its id when it reads as words. The
// act-time check (`co.identify`) computes names with the same functions. Control characters are left in
// names here; adapter/render.py shows them by the rule of page text (lines.flat), as the guard compares them.
//
// `limits` (adapter/reading.py; none: unbounded) bound the walk on any page: elements nested deeper than
// `depth` are left out, the walk stops after `nodes` elements (options of lists counted), and at most `chars`
// characters of text, names and values are copied. What was left out is counted on the returned root
// (data-co-cut-nodes, data-co-cut-depth with data-co-depth, data-co-cut-chars), and the observation says so.
// Page text may use the pool only down to its fifth (CONTROL_SHARE), kept for names, values and options; and a
// name, value, message or option the pool cannot carry still keeps what its control line shows, plus one
// character (FLOOR: the line then says it was cut), from a second pool as large: so no text node or label, however
// large, leaves the controls after it nameless. A cut name or value says on its control how many characters were
// not read (data-co-name-unread, data-co-value-unread), so its line counts them (issue 46).
(listening, limits) => {
  const SKIP = new Set([
    "script", "style", "template", "noscript", "head", "meta", "link", "title", "base", "datalist",
    "math", "video", "audio", "object", "embed", "picture", "hr", "wbr",
  ]);
  // SVG elements whose contents never show as such.
  const SVG_SKIP = new Set([
    "defs", "clipPath", "mask", "symbol", "marker", "pattern", "linearGradient", "radialGradient", "filter",
    "style", "script", "title", "desc", "metadata",
  ]);
  // Elements whose text HTML serialises raw (unescaped), walked here: cloned as a span, so that text put in one by
  // page script can never be read back as markup (a forged control). The other raw-text elements are never copied
  // with their text (script, style, noscript, title and template are skipped, a textarea is a control, a frame a
  // walk of its document).
  const RAW_TEXT = new Set(["xmp", "plaintext", "noframes", "noembed"]);
  const SVG_NS = "http://www.w3.org/2000/svg";
  const XLINK_NS = "http://www.w3.org/1999/xlink";
  // Table rows and cells, whose text the renderer reads cell by cell: as clickables they are offered by a marker
  // inside them.
  const STRUCTURAL = new Set(["tr", "td", "th"]);
  const CLICKABLE_NAME = 80;
  // Flags passed down the walk.
  const IN_CONTROL = 1;  // inside an offered control or a label of one: no clickable here
  const IN_SVG = 2;  // inside SVG content (not a foreignObject): its text is not page text
  const POINTER = 4;  // the parent's cursor is pointer
  const HEARD = 8;  // an ancestor, the document or the window listens for clicks
  const NEAR = 16;  // an ancestor element (not the body or html) listens for clicks
  const UNSEEN_TEXT = 32;  // an ancestor makes its text unseen (opacity 0, indented out of a box that clips)
  const DRAG_LIST = 64;  // the parent is a list that drags its items (dragsItems): not passed further down
  // A transparent control this small is seen and hit by no one (a hidden 1x1 input, its padding and border around it).
  const SPECK = 8;
  // Roles of an icon-only target, which alone get a guessed name: a form field the page leaves nameless is nameless.
  const GUESSED_ROLES = new Set(["button", "link", "clickable", "menuitem", "tab", "treeitem"]);
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
  const NOT_LABEL_TEXT = "select,textarea,input,script,style,[aria-hidden=true],[hidden]";
  const TRANSPARENT = /^(transparent|rgba\(.*,\s*0\))$/;
  // Class names that say nothing of what an icon is (icon sets' base classes, sizes, states).
  const GENERIC_CLASS = /^(fa[srlbdk]?|fa-(solid|regular|light|thin|brands|duotone|sharp|fw|lg|xs|sm|xl|\d+x|spin)|icons?|glyphicon|material-(icons|symbols)(-\w+)?|bi|mdi|ion|btn|btn-.*|button|clickable|active|selected|disabled|hidden|open|show|pointer|cursor-pointer)$/;
  // Prefixes of icon sets' classes, taken off the name they give (`fa-star` names a star).
  const ICON_PREFIX = /^(fa|icon|glyphicon|bi|mdi|ion|ti|la|gg|ri|feather|octicon)-(?=.)/;

  const co = window.__computerops || (window.__computerops = {
    ids: new WeakMap(), byId: new Map(), next: 1, touched: new WeakSet(), listened: new WeakSet(),
    token: Math.random().toString(36).slice(2),
  });
  co.byId = new Map();
  co.offered = new Set();  // elements offered by this annotation, and the shown labels of offered controls
  co.ownPoints = new WeakMap();  // a listening element offered beside what it holds -> [fx, fy] of its own point
  listening = listening || new Map();
  // A node's listener kind (adapter/world.py listener_kind): "activation", "pointer" or "hover", then " press" when
  // it also begins drags. A click reaches a handler only of the first two; "hover" reacts to the pointer passing.
  const kindOf = (n) => listening.get(n) || "";
  const listens = (n) => /^(activation|pointer)/.test(kindOf(n));
  const hovers = (n) => kindOf(n).startsWith("hover");
  const presses = (n) => kindOf(n).endsWith(" press");
  const LIMITS = { depth: Infinity, nodes: Infinity, chars: Infinity, ...(limits || {}) };
  const cut = { nodes: false, deep: 0, chars: 0 };
  let visited = 0;  // elements and options looked at
  let depth = 0;  // how deep the walk is now
  let charsLeft = LIMITS.chars;
  const CONTROL_SHARE = Number.isFinite(LIMITS.chars) ? Math.floor(LIMITS.chars / 5) : 0;
  // Mirrors adapter/observation.py: NAME_CHARS, VALUE_CHARS (values, messages), OPTION_CHARS, each plus one.
  const FLOOR = { name: 201, value: 301, option: 101, href: 301 };
  let floorLeft = LIMITS.chars;
  const out = document.implementation.createHTMLDocument("");
  const offerCache = new Map();
  const markers = new Set();  // clones made only to carry a clickable's marker
  let strongOffered = 0;  // controls, labels of shown controls and listener clickables marked so far
  let weakOffered = 0;  // pointer-only clickables marked so far
  let offeredList = [];  // co.offered in the order marked (what a container holds is a slice of it)
  const clones = new Map();  // an offered element -> its marked clone
  let pinnedSeen = false;  // an element fixed or sticky was walked: controls may lie under it (markCovered)
  const sentinels = [];  // elements that load more of a list as they scroll into view (loadsOnScroll)
  const pinMemo = { lines: new Map(), pinned: new Map(), scrolls: new Map() };  // co.clearScroll's, for this walk

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
    if ((r.width === 0 || r.height === 0) && isToggle(el)) return !shownLabel(el);  // styled away behind its label
    const clips = /(hidden|clip)/.test(style.overflow);
    if ((r.width === 0 || r.height === 0) && clips) return true;
    // a web component's host holds its content in its shadow root (a consent manager's, all fixed or in the top layer)
    return r.width === 0 && r.height === 0 && el.children.length === 0 && !el.textContent.trim() && !el.shadowRoot;
  }

  // Focusable by the keyboard by the page's choice (a tabindex of 0 or more on an element that is no control).
  function focusable(el) {
    return el.hasAttribute("tabindex") && el.tabIndex >= 0;
  }

  function isToggle(el) {
    return el.localName === "input" && (el.type === "checkbox" || el.type === "radio");
  }

  // A label of the element that shows and has a box: clicking it reaches the element.
  function shownLabel(el) {
    for (const label of el.labels || []) {
      const r = label.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && !visuallyHidden(label, r) && !label.closest("[aria-hidden=true],[inert]")
          && label.checkVisibility({ visibilityProperty: true })) return label;
    }
    return null;
  }

  // Seen by nobody: a box of at most 1x1 px, or clipped to nothing by `clip` or `clip-path: inset(50%)`.
  function visuallyHidden(el, box) {
    if (box.width <= 1 && box.height <= 1) return true;
    const style = getComputedStyle(el);
    if (style.clipPath === "inset(50%)") return true;
    const rect = /^rect\((-?[\d.]+)px,? (-?[\d.]+)px,? (-?[\d.]+)px,? (-?[\d.]+)px\)$/.exec(style.clip);
    return Boolean(rect) && (Number(rect[3]) <= Number(rect[1]) || Number(rect[2]) <= Number(rect[4]));
  }

  // A box a few pixels across under opacity 0 (its own or an ancestor's): nobody sees it, nor aims at it. A transparent
  // control that keeps its size (a select over a fake one) is not one: a click there reaches it.
  function transparentSpeck(el, box) {
    if (box.width > SPECK && box.height > SPECK) return false;
    for (let n = el; n && n.nodeType === Node.ELEMENT_NODE; n = parentOf(n)) {
      if (getComputedStyle(n).opacity === "0") return true;
    }
    return false;
  }

  // A list that drags its items (a sortable list: jQuery UI's, SortableJS, a page's own): an element that begins
  // drags (a press listener: kindOf's " press") whose element children are two or more of one tag, laid out as boxes
  // (not inline text), with no text of its own between them. Each item is a drag source at its own point. A list
  // listening only for the pointer passing over its items (delegation, as jQuery's `.on("mouseenter", "li")`)
  // offers its items the same way, as targets of `hover`.
  // Besides the press listener, something must say the children are items: the list's or an item's class names
  // dragging (jQuery UI's `ui-sortable`), an item is draggable or shows a move or grab cursor, or the items share one
  // class (an app's root listening for every press holds a header and a main part, not items).
  const DRAG_WORDS = /sortable|draggable|drag|dnd|reorder/i;
  function dragsItems(el) {
    if (!presses(el) && !hovers(el)) return false;
    const items = [...el.children];
    if (items.length < 2 || items.some((n) => n.localName !== items[0].localName)) return false;
    if ([...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.data.trim())) return false;
    if (!items.every((n) => getComputedStyle(n).display !== "inline")) return false;
    const classOf = (n) => n.getAttribute("class") || "";
    return DRAG_WORDS.test(classOf(el)) || items.every((n) => classOf(n) === classOf(items[0]))
      || items.some((n) => DRAG_WORDS.test(classOf(n)) || n.getAttribute("draggable") === "true"
                     || /^(move|grab|grabbing)$/.test(getComputedStyle(n).cursor));
  }

  function isInvisible(el) {
    return /^(hidden|collapse)$/.test(getComputedStyle(el).visibility);
  }

  // A box entirely left of or above the document's origin (a skip link at left:-9999px): nobody can
  // scroll to it, see it or click it, so such a control is not offered. Content far down or right
  // is offered: scrolling reaches it.
  // Inside a scrolled box, the box's scroll offsets count: a row scrolled up out of a list near the top of the page
  // lies above the origin now, and scrolling the list brings it back.
  function isOffPage(el) {
    const box = el.getBoundingClientRect();
    const view = el.ownerDocument.defaultView;
    if (box.width === 0 || box.height === 0) return false;
    let dx = view.scrollX, dy = view.scrollY;
    if (box.right + dx > 0 && box.bottom + dy > 0) return false;
    const root = el.ownerDocument.documentElement;
    for (let n = parentOf(el); n && n !== root; n = parentOf(n)) {
      dx += n.scrollLeft;
      dy += n.scrollTop;
    }
    return box.right + dx <= 0 || box.bottom + dy <= 0;
  }

  function parentOf(n) {
    return n.assignedSlot || n.parentElement || (n.parentNode && n.parentNode.host) || null;
  }

  function hasHref(el) {
    return el.hasAttribute("href") || (el.namespaceURI === SVG_NS && el.hasAttributeNS(XLINK_NS, "href"));
  }

  function roleOf(el) {
    const tag = el.localName;
    const explicit = (el.getAttribute("role") || "").trim().split(/\s+/)[0];
    if (ARIA_INTERACTIVE.has(explicit)) return explicit;
    // An <a> without href but with a click, mousedown or mouseup listener is a link to Chromium.
    const anchorRole = hasHref(el) || kindOf(el).startsWith("activation") ? "link" : null;
    if (el.namespaceURI === SVG_NS) return tag === "a" ? anchorRole : null;
    switch (tag) {
      case "a": return anchorRole;
      case "area": return el.hasAttribute("href") ? "link" : null;
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
      if (box.width === 0 || box.height === 0) {
        offered = isToggle(el) && Boolean(shownLabel(el));  // no box: only a label can reach it
      } else if (visuallyHidden(el, box) || transparentSpeck(el, box)) {
        offered = Boolean(shownLabel(el));  // nobody sees it: a label that shows is the way to it
      }
    }
    if (offered) offered = !behindModal(el);
    offerCache.set(el, offered);
    return offered;
  }

  // Whether a click anywhere in a document reaches a listener of the document, its window or its body.
  function heardIn(doc) {
    const heard = [doc, doc.defaultView, doc.documentElement, doc.body].some((n) => n && listens(n));
    return heard ? HEARD : 0;
  }

  // A modal dialog makes the rest of its page inert, as assistive technology has it: a <dialog> opened with
  // showModal(), or a dialog or alertdialog marked aria-modal="true" that shows. Of several, the one holding the
  // keyboard focus (the innermost), else the last in document order whose middle is on top (a dialog a later one
  // covers is not the open one); then a dialog on top inside it instead (a confirmation opened inside an edit
  // dialog, which has not taken the focus yet). A non-modal dialog, a closed or hidden
  // one, a drawer or toast without aria-modal changes nothing. Found once per document and walk (`modals`); the
  // elements holding the open one (through shadow hosts and frames) are `modalHolders`, walked for it.
  const modals = new Map();
  const modalHolders = new Set();
  const unseenModals = new Set();  // the open modal dialog of a document is one CSS hid without close()
  // The dialogs (<dialog>, or an element with aria-modal) of a document and of every open shadow root in it, nested,
  // in the order of the flat tree (a shadow root's content where its host is): a web component's modal counts.
  function dialogsIn(root, found = []) {
    for (const n of root.querySelectorAll("*")) {
      if (n.localName === "dialog" || n.hasAttribute("aria-modal")) found.push(n);
      if (n.shadowRoot) dialogsIn(n.shadowRoot, found);
    }
    return found;
  }
  function activeModal(doc) {
    if (modals.has(doc)) return modals.get(doc);
    const candidates = dialogsIn(doc);
    const native = candidates.filter((n) => {
      try { return n.localName === "dialog" && n.matches(":modal"); } catch (e) { return false; }
    });
    let shown = [...native];
    for (const n of candidates) {
      const role = (n.getAttribute("role") || "").trim().split(/\s+/)[0];
      if ((role === "dialog" || role === "alertdialog") && clean(n.getAttribute("aria-modal")).toLowerCase() === "true"
          && !shown.includes(n)) shown.push(n);
    }
    shown = shown.filter((n) => {
      const box = n.getBoundingClientRect();
      return box.width > 0 && box.height > 0 && !hiddenAbove(n) && n.checkVisibility({ visibilityProperty: true });
    }).sort((a, b) => candidates.indexOf(a) - candidates.indexOf(b));
    let focus = doc.activeElement;
    while (focus && focus.shadowRoot && focus.shadowRoot.activeElement) focus = focus.shadowRoot.activeElement;
    const onTop = shown.filter((n) => middleOnTop(n));
    let modal = shown.filter((n) => holds(n, focus)).pop() || onTop[onTop.length - 1]
      || shown.find((n) => n.localName === "dialog") || null;
    for (const n of onTop) if (modal && n !== modal && holds(modal, n)) modal = n;  // one opened inside it
    if (!modal && native.length) {
      // A <dialog> opened with showModal() that CSS hid (display:none, a closing animation's end) without close():
      // the browser still holds the page behind it inert (a click there lands on nothing of it), so nothing there is
      // offered, and the header says so.
      modal = native[native.length - 1];
      unseenModals.add(modal);
    }
    modals.set(doc, modal);
    for (let n = modal; n; ) {
      modalHolders.add(n);
      const up = parentOf(n);
      n = up || (n.ownerDocument && n.ownerDocument.defaultView && n.ownerDocument.defaultView.frameElement) || null;
    }
    return modal;
  }

  // Inert or aria-hidden with an ancestor (through shadow hosts): hidden with it.
  function hiddenAbove(el) {
    for (let n = el; n; n = parentOf(n)) if (n.inert || n.getAttribute("aria-hidden") === "true") return true;
    return false;
  }

  // Whether `el` is `box` or inside it (through shadow roots and slots).
  function holds(box, el) {
    for (let n = el; n; n = parentOf(n)) if (n === box) return true;
    return false;
  }

  // What a click at the middle of the part of an element in its window lands on is the element or inside it.
  function middleOnTop(el) {
    const box = el.getBoundingClientRect(), view = el.ownerDocument.defaultView;
    const left = Math.max(box.left, 0), right = Math.min(box.right, view.innerWidth);
    const top = Math.max(box.top, 0), bottom = Math.min(box.bottom, view.innerHeight);
    if (right <= left || bottom <= top) return false;
    return holds(el, hitAt(el.ownerDocument, (left + right) / 2, (top + bottom) / 2));
  }

  function hitAt(doc, x, y) {
    let hit = doc.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  }

  // Behind the open modal dialog of its document, or of a document holding its frame.
  function behindModal(el) {
    for (let n = el; n; n = n.ownerDocument.defaultView.frameElement) {
      const modal = activeModal(n.ownerDocument);
      if (modal && !holds(modal, n)) return true;
    }
    return false;
  }

  // The outermost box fixed to the window (or stuck, position: sticky) that holds `n`; null when none does.
  function pinnedBox(n) {
    let found = null;
    for (; n && n.nodeType === Node.ELEMENT_NODE; n = parentOf(n)) {
      const position = getComputedStyle(n).position;
      if (position === "fixed" || position === "sticky") found = n;
    }
    return found;
  }
  co.pinnedBox = pinnedBox;
  co.hitAt = hitAt;  // for the driver's click point (adapter/page_functions.py CLICK_POINT)

  // What keeps a box over the same part of the view while `scroller` (an element, or a window) scrolls along `axis`
  // ("y" down, "x" across): a box fixed to the window, or one stuck on that axis (position: sticky with a top or bottom
  // offset for "y", left or right for "x") in `scroller` or in a box holding it (a grid's sticky header stays while
  // the grid scrolls, and moves with it while the window scrolls). Whether `n` or a box holding it is one.
  function pinnedFor(n, scroller, memo, axis) {
    let known = memo.pinned.get(scroller);
    if (!known) memo.pinned.set(scroller, known = new Map());
    let found = known.get(n);
    if (!found) {
      found = { x: false, y: false };
      for (let m = n; m && m.nodeType === Node.ELEMENT_NODE && !(found.x && found.y); m = parentOf(m)) {
        const s = getComputedStyle(m);
        if (s.position === "fixed") found.x = found.y = true;
        if (s.position !== "sticky") continue;
        const box = stickyContainer(m);
        const inIt = box === scroller || (box.nodeType !== Node.ELEMENT_NODE ? box === viewOf(scroller)
          : scroller.nodeType === Node.ELEMENT_NODE && holds(box, scroller));
        if (inIt && (s.top !== "auto" || s.bottom !== "auto")) found.y = true;
        if (inIt && (s.left !== "auto" || s.right !== "auto")) found.x = true;
      }
      known.set(n, found);
    }
    return found[axis];
  }
  const viewOf = (scroller) => (scroller.nodeType === Node.ELEMENT_NODE ? scroller.ownerDocument.defaultView : scroller);

  // The overflow of a document's viewport: its root's, else (the root's is visible) its body's, which then is no box
  // that scrolls of its own.
  function viewportTakesBody(doc) {
    const s = getComputedStyle(doc.documentElement);
    return s.overflowX === "visible" && s.overflowY === "visible";
  }
  // The box a sticky element sticks in: its nearest ancestor whose overflow is not visible (or clip), else its window.
  function stickyContainer(n) {
    const doc = n.ownerDocument;
    for (let m = parentOf(n); m && m !== doc.documentElement; m = parentOf(m)) {
      if (m === doc.body && viewportTakesBody(doc)) continue;
      const s = getComputedStyle(m);
      if (/^(auto|scroll|hidden|overlay)$/.test(s.overflowY) || /^(auto|scroll|hidden|overlay)$/.test(s.overflowX)) {
        return m;
      }
    }
    return doc.defaultView;
  }
  // What a person scrolls to move an element, innermost first: each ancestor box that scrolls it (overflow auto or
  // scroll, with more content than room on that axis), then its window when the page scrolls (not overflow hidden).
  const SCROLLS = /^(auto|scroll|overlay)$/;
  function scrollersOf(el, memo) {
    const doc = el.ownerDocument, view = doc.defaultView, root = doc.documentElement;
    const found = [];
    for (let m = parentOf(el); m && m !== root; m = parentOf(m)) {
      let scrolls = memo.scrolls.get(m);
      if (scrolls === undefined) {
        const s = getComputedStyle(m);
        scrolls = !(m === doc.body && viewportTakesBody(doc)) && ((SCROLLS.test(s.overflowY)
          && m.scrollHeight > m.clientHeight) || (SCROLLS.test(s.overflowX) && m.scrollWidth > m.clientWidth));
        memo.scrolls.set(m, scrolls);
      }
      if (scrolls) found.push(m);
    }
    let scrolls = memo.scrolls.get(view);
    if (scrolls === undefined) {
      const viewport = getComputedStyle(viewportTakesBody(doc) && doc.body ? doc.body : root);
      const page = doc.scrollingElement || root;
      scrolls = (!/^(hidden|clip)$/.test(viewport.overflowY) && page.scrollHeight > view.innerHeight)
        || (!/^(hidden|clip)$/.test(viewport.overflowX) && page.scrollWidth > view.innerWidth);
      memo.scrolls.set(view, scrolls);
    }
    if (scrolls) found.push(view);
    return found;
  }
  // Along one axis ("y" down, "x" across) of a scroller: the part of its window's view it shows [start, end), and how
  // far it scrolls back and on from where it is.
  function scrollBand(scroller, axis) {
    const y = axis === "y";
    if (scroller.nodeType !== Node.ELEMENT_NODE) {
      const page = scroller.document.scrollingElement || scroller.document.documentElement;
      const size = y ? scroller.innerHeight : scroller.innerWidth, at = y ? scroller.scrollY : scroller.scrollX;
      return [0, size, at, (y ? page.scrollHeight : page.scrollWidth) - size - at];
    }
    const view = scroller.ownerDocument.defaultView, r = scroller.getBoundingClientRect();
    const start = y ? r.top + scroller.clientTop : r.left + scroller.clientLeft;
    const room = y ? scroller.clientHeight : scroller.clientWidth, at = y ? scroller.scrollTop : scroller.scrollLeft;
    return [Math.max(start, 0), Math.min(start + room, y ? view.innerHeight : view.innerWidth), at,
            (y ? scroller.scrollHeight : scroller.scrollWidth) - room - at];
  }

  // The scroll that brings a point of an element (its middle unless `point`, in its window's coordinates) out from
  // under `cover` (what a click there lands on now; hit-tested when not given) and every other box pinned over it, the
  // least there is: {scroller, top, left} (scroller.scrollBy those; 0, 0: clear where it is), trying each box that
  // scrolls it, innermost first, down then across (scrollersOf: a grid under its sticky header, an app shell's
  // content area under a cookie banner, then the window); null when none can (a box over the whole window, a page
  // too short to scroll it clear, a cover that moves with the element). Judged by hit tests along the line of the
  // point through the scroller's view every PIN_STEP px (`memo` keeps them for one walk). A person scrolls a control
  // out from under a cookie banner before clicking it; the driver does so (adapter/page_functions.py CLICK_POINT).
  // For a control in a frame that a box of a page around it covers, `el` is that page's frame element.
  const PIN_STEP = 6;
  const pinMemoNew = () => ({ lines: new Map(), pinned: new Map(), scrolls: new Map() });
  co.clearScroll = (el, memo = pinMemoNew(), point = null, cover = null) => {
    const doc = el.ownerDocument, view = doc.defaultView;
    const box = el.getBoundingClientRect();
    const [x, y] = point || [box.left + box.width / 2, box.top + box.height / 2];
    const shown = x >= 0 && y >= 0 && x < view.innerWidth && y < view.innerHeight;
    // out of the window with no cover named: any scroll that brings it where nothing pinned lies over it
    const over = cover || (shown ? hitAt(doc, x, y) : null);
    if (!over && shown) return null;
    for (const scroller of scrollersOf(el, memo)) {
      for (const axis of ["y", "x"]) {
        // what covers it moves with it as this one scrolls, or it stays where it is
        if ((over && !pinnedFor(over, scroller, memo, axis)) || pinnedFor(el, scroller, memo, axis)) continue;
        const along = axis === "y" ? y : x, across = axis === "y" ? x : y;
        if (across < 0 || across >= (axis === "y" ? view.innerWidth : view.innerHeight)) continue;
        const [start, end, back, on] = scrollBand(scroller, axis);
        if (back <= 0 && on <= 0) continue;
        let lines = memo.lines.get(scroller);
        if (!lines) memo.lines.set(scroller, lines = new Map());
        const key = `${axis}${Math.round(across)}`;
        let line = lines.get(key);
        if (!line) {
          line = [];
          for (let at = start + PIN_STEP / 2; at < end; at += PIN_STEP) {
            line.push([at, axis === "y" ? hitAt(doc, across, at) : hitAt(doc, at, across)]);
          }
          lines.set(key, line);
        }
        let best = null;
        for (const [at, hit] of line) {
          if (hit && pinnedFor(hit, scroller, memo, axis) && !holds(hit, el) && !holds(el, hit)) continue;
          const by = Math.round(along - at);
          if (by <= on && -by <= back && (best === null || Math.abs(by) < Math.abs(best))) best = by;
        }
        if (best !== null) return { scroller, top: axis === "y" ? best : 0, left: axis === "x" ? best : 0 };
      }
    }
    return null;
  };

  // The points of a control a click may land on besides its middle (fractions of its box), tried when its middle is
  // covered (a banner over its lower half): a person clicks the part that shows. CLICK_POINT tries the same ones.
  const COVER_POINTS = [[0.5, 0.25], [0.5, 0.75], [0.25, 0.5], [0.75, 0.5], [0.5, 0.1], [0.5, 0.9], [0.1, 0.5],
                        [0.9, 0.5]];
  co.coverPoints = COVER_POINTS;
  // What a click at a point of an element's window takes, followed out through the frames that hold it: null when it
  // lands on the element (or a label of it) and on each frame around it; else {hit, target, point}: what took it, and
  // the element (or the frame holding it) it should have landed on, the point in that one's window.
  function coveredAt(el, x, y) {
    let target = el, doc = el.ownerDocument;
    for (;;) {
      const hit = hitAt(doc, x, y);
      if (!hit) return { hit: null, target, point: [x, y] };
      if (!holds(target, hit) && !(target === el && [...(el.labels || [])].some((label) => holds(label, hit)))) {
        return { hit, target, point: [x, y] };
      }
      const view = doc.defaultView, frame = view.frameElement;
      if (view === window || !frame) return null;
      const f = frame.getBoundingClientRect();
      x += f.left + frame.clientLeft;
      y += f.top + frame.clientTop;
      target = frame;
      doc = frame.ownerDocument;
    }
  }
  // Whether a point of an element other than its middle (COVER_POINTS, inside its window) takes a click.
  function showsElsewhere(el) {
    const box = el.getBoundingClientRect(), view = el.ownerDocument.defaultView;
    const inset = (start, size, f) => {  // kept a pixel inside its edges, as CLICK_POINT's
      const margin = Math.min(1, size / 2);
      return start + Math.min(Math.max(f * size, margin), size - margin);
    };
    return COVER_POINTS.some(([fx, fy]) => {
      const x = inset(box.left, box.width, fx), y = inset(box.top, box.height, fy);
      return x >= 0 && y >= 0 && x < view.innerWidth && y < view.innerHeight && coveredAt(el, x, y) === null;
    });
  }

  // A short name for a box the observation tells of (a dialog, a banner): its aria-labelledby or aria-label, else its
  // first heading, else its tag, id and classes (as the driver names what covers a control).
  const BOX_NAME = 60;
  function boxName(el) {
    const labelled = el.hasAttribute("aria-labelledby") || el.hasAttribute("aria-label") ? nameOf(el, "dialog") : "";
    const heading = el.querySelector("h1,h2,h3,h4,h5,h6,[role=heading]");
    let name = labelled || (heading ? clean(heading.textContent) : "");
    if (!name) {
      const classes = typeof el.className === "string" ? clean(el.className).split(" ").filter(Boolean) : [];
      name = `<${el.localName}${el.id ? "#" + el.id : ""}${classes.map((c) => "." + c).join("")}>`;
    }
    return name.length <= BOX_NAME ? name : name.slice(0, BOX_NAME - 1) + "…";
  }

  // Offered controls whose middle, in the window, lies under a box fixed or stuck over it (a cookie banner at the
  // bottom, a sticky header; in a frame, one over the frame in a page around it too), and no other of their points
  // (COVER_POINTS) takes a click: one the driver cannot scroll clear (co.clearScroll: the boxes that scroll it, then
  // the window) is marked covered (data-co-covered; its line says so); the root lists each such box with how many
  // controls it covers and how many lie under it but are scrolled clear when used (data-co-covers: [[name, covered,
  // clear], ...]). Out of the window (the driver scrolls such a control into view), a control of the top document is
  // judged only when a box covers some in the window (the last rows of a list the banner always covers, wherever the
  // page or its content area is scrolled), and only when its middle is inside the window's width.
  function markCovered(root) {
    const covers = new Map();
    const outside = [];
    for (const [el, c] of clones) {
      if (c.getAttribute("data-co-role") === "clickable") continue;
      const view = el.ownerDocument.defaultView;
      const box = el.getBoundingClientRect();
      const x = box.left + box.width / 2, y = box.top + box.height / 2;
      if (x < 0 || y < 0 || x >= view.innerWidth || y >= view.innerHeight) {
        if (el.ownerDocument === document) outside.push([el, c]);
        continue;
      }
      const at = coveredAt(el, x, y);
      const cover = at && at.hit ? pinnedBox(at.hit) : null;
      if (!cover || holds(cover, at.target) || showsElsewhere(el)) continue;
      const counts = covers.get(cover) || [0, 0];
      if (co.clearScroll(at.target, pinMemo, at.point, at.hit) === null) {
        c.setAttribute("data-co-covered", "");
        counts[0]++;
      } else {
        counts[1]++;
      }
      covers.set(cover, counts);
    }
    // each control counted once, under the first box that covers some for good, else the first there is
    const mine = [...covers].filter(([cover]) => cover.ownerDocument === document);
    const [cover, counts] = mine.find(([, counts]) => counts[0]) || mine[0] || [null, null];
    for (const [el, c] of cover ? outside : []) {
      const box = el.getBoundingClientRect(), x = box.left + box.width / 2;
      if (x >= 0 && x < innerWidth && !holds(cover, el) && co.clearScroll(el, pinMemo) === null) {
        c.setAttribute("data-co-covered", "");
        counts[0]++;
      }
    }
    // boxes of one name told as one (each sticky cell of a grid's first column is a box of its own)
    const named = new Map();
    for (const [n, counts] of covers) {
      const name = boxName(n), both = named.get(name) || [0, 0];
      named.set(name, [both[0] + counts[0], both[1] + counts[1]]);
    }
    if (named.size) root.setAttribute("data-co-covers", JSON.stringify([...named].map(([n, counts]) => [n, ...counts])));
  }

  // An element that loads more of a list as it scrolls into view (an IntersectionObserver's sentinel, an endless
  // list's "Loading more…" line): named so by its class or id, or a short "Loading…" / "Load more" text of no
  // control, at a list's end (right after a table, a list, a feed or a run of like items, or last in one). The
  // observation says that more loads on scroll, and `more` scrolls it into view (adapter/driver.py).
  const SENTINEL_WORDS = /(^|[\s_-])(sentinel|infinite|lazy|load-?more|loader|loading|scroll-?(trigger|anchor|end))([\s_-]|$)/i;
  const LOADING_TEXT = /^\s*(loading|load(ing)?\s+more|fetching)\b/i;
  const CONTROLLISH = "a[href],button,input,select,textarea,[role=button],[role=link],[onclick]";
  // Cheapest first: it is asked of every element the walk meets that is no control.
  function loadsOnScroll(el) {
    const named = SENTINEL_WORDS.test(`${el.getAttribute("class") || ""} ${el.id || ""}`);
    if (!named && el.childElementCount > 2) return false;
    const parent = el.parentElement;
    if (!listLike(el.previousElementSibling, null) && !(parent && el === parent.lastElementChild
        && parent !== el.ownerDocument.body && listLike(parent, el))) return false;
    if (!named) {
      const text = el.textContent;
      if (text.length > 80 || !LOADING_TEXT.test(text)) return false;
    }
    return !el.querySelector(CONTROLLISH);  // a "Load more" button's box: the button is offered
  }

  // A table, list, feed or grid, or a box of three or more like items (`besides`: an element not counted).
  function listLike(n, besides) {
    if (!n) return false;
    if (/^(table|tbody|ul|ol)$/.test(n.localName)) return true;
    if (/^(list|feed|grid|table|rowgroup|treegrid)$/.test((n.getAttribute("role") || "").trim().split(/\s+/)[0])) {
      return true;
    }
    const items = [...n.children].filter((m) => m !== besides);
    return items.length >= 3 && items.every((m) => m.localName === items[0].localName
      && (m.getAttribute("class") || "") === (items[0].getAttribute("class") || ""));
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

  // The text of an element's subtree in document order, by a stack of its own (no recursion, so no page is nested
  // too deep for it), at most LIMITS.depth levels and LIMITS.nodes elements down. `step(child)` says what a child
  // element gives: null (nothing), a string (that text), or [walk its children?, spaces around it?, does its own
  // text show? (default yes)]. `shows`: whether the element's own text nodes show.
  function gatherText(el, step, shows = true) {
    let text = "", seen = 0;
    const stack = [...el.childNodes].reverse().map((n) => [n, 1, shows]);
    while (stack.length) {
      const [node, level, textShown] = stack.pop();
      if (typeof node === "string") text += node;
      else if (node.nodeType === Node.TEXT_NODE) text += textShown ? node.data : "";
      else if (node.nodeType === Node.ELEMENT_NODE && level <= LIMITS.depth && seen++ < LIMITS.nodes) {
        const given = step(node);
        if (typeof given === "string") text += given;
        else if (given) {
          const [walk, spaced, own = true] = given;
          if (spaced) stack.push([" ", level, true]);
          if (walk) for (const child of [...node.childNodes].reverse()) stack.push([child, level + 1, own]);
          if (spaced) stack.push([" ", level, true]);
        }
      }
    }
    return text;
  }

  function textWithoutControls(node) {
    if (textNeedsWalk(node, false) && [node, ...node.getElementsByTagName("*")].some((n) => {
      const style = getComputedStyle(n);
      return (n !== node && hidesText(n, style)) || !textShows(n, style);
    })) {
      // Text nobody sees inside (textShows, hidesText): walk the live label, as the clone has no styles.
      return clean(gatherText(node, (child) => {
        if (child.matches(NOT_LABEL_TEXT)) return null;
        const style = getComputedStyle(child);
        return hidesText(child, style) ? null : [true, false, textShows(child, style)];
      }, textShows(node, getComputedStyle(node))));
    }
    const copy = node.cloneNode(true);
    copy.querySelectorAll(NOT_LABEL_TEXT)
      .forEach((n) => n.remove());
    return clean(copy.textContent);
  }

  // Text nobody sees: the element's own text at font-size 0, or drawn in a transparent colour (not gradient text,
  // whose transparent fill shows a background clipped to it).
  function textShows(el, style) {
    if (parseFloat(style.fontSize) === 0) return false;
    if (!TRANSPARENT.test(style.webkitTextFillColor || style.color)) return true;
    for (let n = el; n && n.nodeType === Node.ELEMENT_NODE; n = parentOf(n)) {
      const s = getComputedStyle(n);
      if (s.backgroundClip === "text" || s.webkitBackgroundClip === "text") return true;
    }
    return false;
  }

  // An element that makes all the text inside it unseen, whatever its descendants set: opacity 0, or a first-line
  // indent that moves the text out of the element's own box, which clips it (the "image replacement" pattern).
  // A control keeps being offered under opacity 0 (a transparent select over a fake one); only text is unseen.
  function hidesText(el, style) {
    if (style.opacity === "0") return true;
    const indent = parseFloat(style.textIndent);
    if (!indent || style.overflowX === "visible") return false;
    return Math.abs(indent) >= el.getBoundingClientRect().width;
  }

  // Whether a name needs the walk below rather than innerText: something inside hides its text, aria-hidden
  // takes it out of the accessibility tree, or (`skipOffered`) it holds offered controls.
  function textNeedsWalk(el, skipOffered) {
    if (!textShows(el, getComputedStyle(el))) return true;
    for (const n of el.getElementsByTagName("*")) {
      if (n.getAttribute("aria-hidden") === "true" || (skipOffered && co.offered.has(n))) return true;
      const s = getComputedStyle(n);
      if (hidesText(n, s) || !textShows(n, s)) return true;
    }
    return false;
  }

  // Rendered text of an element, without what aria-hidden takes out of the accessibility tree, without text nobody
  // sees (textShows, hidesText: the same rules as page text), and, for a clickable (`skipOffered`), without the
  // offered controls inside it (and the shown labels of offered controls), which have names of their own.
  function renderedText(el, skipOffered) {
    if (!textNeedsWalk(el, skipOffered)) return el.innerText;
    return gatherText(el, (child) => {
      if (child.localName === "br") return " ";
      if (child.getAttribute("aria-hidden") === "true" || (skipOffered && co.offered.has(child))
          || SKIP.has(child.localName) || !child.checkVisibility({ visibilityProperty: true })) return null;
      const style = getComputedStyle(child);
      if (hidesText(child, style)) return null;
      return [true, BLOCKISH.test(style.display), textShows(child, style)];
    }, textShows(el, getComputedStyle(el)));
  }

  function contentName(el, skipOffered) {
    const text = clean(renderedText(el, skipOffered));
    if (text) return text;
    for (const n of el.querySelectorAll("img[alt],[aria-label]:not([aria-hidden=true]),svg title")) {
      if (skipOffered && [...co.offered].some((o) => o !== el && o.contains(n))) continue;
      const t = clean(n.localName === "img" ? n.alt : n.getAttribute("aria-label") || n.textContent);
      if (t) return t;
    }
    return "";
  }

  // The title child of an SVG element (its tooltip and, to Chromium, its name).
  function svgTitle(el) {
    for (const child of el.children) if (child.localName === "title") return clean(child.textContent);
    return "";
  }

  // The text an SVG element draws (<text>, <tspan>...), without titles, descriptions and definitions.
  function svgText(el) {
    return gatherText(el, (child) => SVG_SKIP.has(child.localName) ? null
      : [true, !/^(tspan|textPath|a)$/.test(child.localName)]);
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
    if (el.namespaceURI === SVG_NS) {
      const titled = svgTitle(el) || clean(svgText(el)) || clean(el.getAttributeNS(XLINK_NS, "title"));
      return titled || (role === "link" && hasHref(el) ? hrefOf(el) || "" : "");
    }
    if (tag === "img") return clean(el.alt) || clean(el.getAttribute("title"));
    if (tag === "input" && BUTTON_INPUTS.has(el.type)) {
      if (el.type === "image") return clean(el.alt) || clean(el.value) || "Submit";
      if (el.type === "file") return clean(labelsText(el)) || clean(el.title) || "Choose file";
      return clean(el.value) || { submit: "Submit", reset: "Reset" }[el.type] || clean(el.title);
    }
    if (tag === "canvas") return clean(el.getAttribute("title")) || clean(el.textContent);  // its fallback content
    // A role-less target's name is its title before its content, as Chromium names a generic element (an icon span
    // titled "Delete" is not named by its glyph).
    if (role === "clickable" && clean(el.getAttribute("title"))) return clean(el.getAttribute("title"));
    const fromLabels = labelsText(el);
    if (["input", "select", "textarea"].includes(tag) && fromLabels) return fromLabels;
    if (tag !== "input" && tag !== "select" && tag !== "textarea" && !el.isContentEditable) {
      const text = contentName(el, role === "clickable");
      if (text) return text;
    }
    if (fromLabels) return fromLabels;
    const fallback = clean(el.getAttribute("title")) || clean(el.getAttribute("placeholder"));
    if (fallback) return fallback;
    if (role === "link" && hasHref(el)) return hrefOf(el) || "";
    return "";
  }

  // The name offered with a control and where it came from: [name, null] when the page names it (nameOf); for a
  // control the page leaves nameless (an icon-only target), a guess marked as one: [name, "file"] from its image's
  // file name (an <img>, an SVG <use>, a CSS background image, its own or inside it), else [name, "class"] from its
  // class or its icon's (`fa fa-star`: "star"); ["", null] when there is nothing to go by.
  function offeredName(el, role) {
    const name = nameOf(el, role);
    if (name) return [name, null];
    if (!GUESSED_ROLES.has(role) || /^(input|select|textarea)$/.test(el.localName) || el.isContentEditable) {
      return ["", null];
    }
    const guessed = fileName(el);
    if (guessed) return [guessed, "file"];
    const fromClass = className(el);
    if (fromClass) return [fromClass, "class"];
    const fromId = idName(el);
    return fromId ? [fromId, "id"] : ["", null];
  }

  // The element's id when it reads as a word or words (`send-reply`), not a generated one (`ember123`, a uuid).
  function idName(el) {
    const id = clean(el.getAttribute("id"));
    return /^[A-Za-z][A-Za-z_-]{1,39}$/.test(id) ? id.replace(ICON_PREFIX, "") : "";
  }

  function inside(el) {
    return [el, ...[...el.getElementsByTagName("*")].slice(0, 20)];
  }

  function fileName(el) {
    for (const n of inside(el)) {
      let url = null;
      if (n.localName === "img") url = n.currentSrc || n.getAttribute("src");
      else if (n.localName === "use") url = n.getAttribute("href") ?? n.getAttributeNS(XLINK_NS, "href");
      else {
        const image = /url\(["']?([^"')]+)["']?\)/.exec(getComputedStyle(n).backgroundImage);
        url = image && image[1];
      }
      if (!url || url.startsWith("data:")) continue;
      let last = "";
      try {
        const parsed = new URL(url, n.baseURI);
        last = parsed.hash.length > 1 ? parsed.hash.slice(1) : parsed.pathname.split("/").pop();
        last = decodeURIComponent(last);
      } catch (e) { continue; }
      const stem = clean(last.replace(/\.[A-Za-z0-9]{1,5}$/, "").replace(ICON_PREFIX, ""));
      if (stem) return stem.slice(0, CLICKABLE_NAME);
    }
    return "";
  }

  // A class of the element or its icon: an icon set's (`fa-star`) first, else the first that tells the element apart
  // from its siblings (`snooze-button`, not the `tool` every button of a toolbar has), else the first.
  function className(el) {
    const tokens = (n) => clean(n.getAttribute("class")).split(" ").filter((t) => t && !GENERIC_CLASS.test(t));
    const siblings = el.parentElement ? [...el.parentElement.children].filter((n) => n !== el) : [];
    const shared = (t) => siblings.length > 0 && siblings.every((n) => n.classList.contains(t));
    const distinct = tokens(el).find((t) => !shared(t));
    const candidates = inside(el);
    for (const n of candidates) {
      const icon = tokens(n).find((t) => ICON_PREFIX.test(t));
      if (icon) return icon.replace(ICON_PREFIX, "").slice(0, CLICKABLE_NAME);
    }
    if (distinct) return distinct.slice(0, CLICKABLE_NAME);
    for (const n of candidates) {
      const [first] = tokens(n);
      if (first) return first.slice(0, CLICKABLE_NAME);
    }
    return "";
  }

  function labelsText(el) {
    return el.labels ? clean([...el.labels].map(textWithoutControls).join(" ")) : "";
  }

  function hrefOf(el) {
    const raw = el.namespaceURI === SVG_NS ? el.getAttribute("href") ?? el.getAttributeNS(XLINK_NS, "href") : el.href;
    try {
      const url = new URL(raw, el.baseURI);
      return url.origin === location.origin ? url.pathname + url.search + url.hash : url.href;
    } catch (e) {
      return el.getAttribute("href");
    }
  }

  // At most what is left of LIMITS.chars of a text, counting what is cut: page text (no `floor`) down to
  // CONTROL_SHARE; a control's text (`floor`: FLOOR's) all of the pool, and at least `floor` characters.
  function take(text, floor = 0) {
    const s = String(text);
    const pool = floor ? charsLeft : Math.max(charsLeft - CONTROL_SHARE, 0);
    let keep = Math.min(s.length, pool);
    charsLeft -= keep;
    const least = Math.min(floor, s.length);
    if (keep < least) {
      const extra = Math.min(least - keep, floorLeft);
      floorLeft -= extra;
      keep += extra;
    }
    cut.chars += s.length - keep;
    return keep === s.length ? s : s.slice(0, keep);
  }

  // A control's text, with what the reading did not read of it said on the control (`what`: name, value).
  function takeOn(c, what, text, floor) {
    const s = String(text);
    const kept = take(s, floor);
    if (kept.length < s.length) c.setAttribute(`data-co-${what}-unread`, String(s.length - kept.length));
    return kept;
  }

  // The items while the walk has elements left to look at (each counts as one).
  function* bounded(items) {
    for (const item of items) {
      if (visited >= LIMITS.nodes) {
        cut.nodes = true;
        return;
      }
      visited++;
      yield item;
    }
  }

  function optionsOf(select) {
    return [...bounded(select.options)]
      .filter((o) => !o.hidden && !o.disabled && !(o.parentElement.localName === "optgroup" && o.parentElement.disabled))
      .map((o) => take(clean(o.label), FLOOR.option));
  }

  function mark(el, c, role, named) {
    const tag = el.localName;
    const [name, from] = named ?? offeredName(el, role);
    c.setAttribute("data-co-id", idFor(el));
    c.setAttribute("data-co-role", role);
    clones.set(el, c);
    const shownName = takeOn(c, "name", name, FLOOR.name);
    c.setAttribute("data-co-name", shownName);
    if (shownName.length < name.length) c.setAttribute("data-co-name-cut", "");  // by the reading's `chars`
    if (from) c.setAttribute("data-co-name-from", from);
    co.offered.add(el);
    offeredList.push(el);
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
      value = [...bounded(el.selectedOptions)].map((o) => clean(o.label)).join(", ");
      c.setAttribute("data-co-options", JSON.stringify(optionsOf(el)));
    } else if (el.isContentEditable) {
      value = el.innerText.trim();
    } else if (el.hasAttribute("aria-valuenow") || el.hasAttribute("aria-valuetext")) {
      value = el.getAttribute("aria-valuetext") || el.getAttribute("aria-valuenow");
    }
    if (value !== null) c.setAttribute("data-co-value", takeOn(c, "value", value, FLOOR.value));
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
        c.setAttribute("data-co-validation", take(el.validationMessage + hint, FLOOR.value));
      }
    }
    if (role === "link" && hasHref(el)) c.setAttribute("data-co-href", take(hrefOf(el), FLOOR.href));
    // An input whose type constrains its value: the control line shows the type and format (adapter/inputs.py).
    if (tag === "input" && /^(date|time|datetime-local|month|week|color|number|range)$/.test(el.type)) {
      c.setAttribute("data-co-type", el.type);
    }
  }

  // Where the driver's click lands (the centre) hits the element or something inside it. Only what shows can be
  // hit-tested: when the centre is outside its window, or cut off by a box that scrolls (a row below the visible
  // part of a list, in a nested or sideways-scrolling box too), the driver scrolls it into view in every scrolling
  // box and checks again before clicking, so it counts as hit; cut off by `overflow: clip`, which no scrolling
  // moves, it does not.
  function hitAtCentre(el, [fx, fy] = [0.5, 0.5]) {
    const box = el.getBoundingClientRect();
    const view = el.ownerDocument.defaultView;
    const x = box.left + box.width * fx, y = box.top + box.height * fy;
    if (x < 0 || y < 0 || x >= view.innerWidth || y >= view.innerHeight) return true;
    let hit = el.ownerDocument.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    for (let n = hit; n; n = n.parentNode || n.host) if (n === el) return true;
    if (pointCutOff(el, x, y) === "scrolls") return true;
    // under a box fixed over the window (a cookie banner): offered when another point of it shows (CLICK_POINT clicks
    // there), or the driver can scroll it clear first
    const cover = hit && pinnedBox(hit);
    if (!cover || holds(cover, el) || fx !== 0.5 || fy !== 0.5) return false;
    return showsElsewhere(el) || co.clearScroll(el, pinMemo, [x, y], hit) !== null;
  }

  // Whether a point of an element (in its window's coordinates) is cut off by an ancestor that clips it, along its
  // containing-block chain as the driver's VISIBLE_PART (a fixed or absolute box escapes boxes that do not contain
  // it): "scrolls" when every such ancestor can scroll it into view, "clipped" when one cannot (overflow: clip),
  // null when the point shows.
  function pointCutOff(el, x, y) {
    const doc = el.ownerDocument, root = doc.documentElement;
    const containsFixed = (s) => s.transform !== "none" || s.perspective !== "none" || s.filter !== "none"
      || /paint|layout|strict|content/.test(s.contain) || /transform|perspective|filter/.test(s.willChange);
    let position = getComputedStyle(el).position, found = null;
    for (let n = parentOf(el); n && n !== root; n = parentOf(n)) {
      const s = getComputedStyle(n);
      const contains = position === "fixed" ? containsFixed(s)
        : position === "absolute" ? s.position !== "static" || containsFixed(s) : true;
      if (!contains) continue;
      position = s.position;
      if (n === doc.body) continue;  // the body's overflow is the window's, or shows all the page
      const r = n.getBoundingClientRect(), left = r.left + n.clientLeft, top = r.top + n.clientTop;
      const outX = s.overflowX !== "visible" && (x < left || x >= left + n.clientWidth);
      const outY = s.overflowY !== "visible" && (y < top || y >= top + n.clientHeight);
      if (!outX && !outY) continue;
      if ((outX && s.overflowX === "clip") || (outY && s.overflowY === "clip")) return "clipped";
      found = "scrolls";
    }
    return found;
  }

  function canOfferClickable(el, point) {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && !isOffPage(el) && !behindModal(el) && hitAtCentre(el, point);
  }

  // A clickable's name as offered: cut at CLICKABLE_NAME characters.
  function clickableName(name) {
    return name.length <= CLICKABLE_NAME ? name : name.slice(0, CLICKABLE_NAME - 1) + "…";
  }

  // Mark a clickable on its clone, or on a marker at the clone's start (see the opening comment).
  function markClickable(el, c) {
    const [name, from] = offeredName(el, "clickable");
    if (name.length <= CLICKABLE_NAME && !STRUCTURAL.has(el.localName)) {
      mark(el, c, "clickable", [name, from]);
      return;
    }
    let host = c;
    if (el.localName === "tr") host = [...c.children].find((n) => n.localName === "td" || n.localName === "th") || c;
    const marker = host.insertBefore(out.createElement("span"), host.firstChild);
    markers.add(marker);
    mark(el, marker, "clickable", [clickableName(name), from]);
  }

  // A point of a listening element that is its own (where the driver clicks it, as fractions of its box): the
  // first of OWN_POINTS (its centre, then along its middle line, then above and below the middle) in no box of what
  // it holds that is, or holds, an offered control or a shown label of one (`inner`: those, in the order marked);
  // null when none is. A list row whose title is at its centre, beside star and delete icons, is its own there; one
  // whose icon sits at its centre is its own a quarter of the way in. A list whose items are offered, an app's root
  // or a backdrop around a dialog has them (or a part holding them) at every such point: it delegates. Judged by
  // boxes, not by a hit test, so that it holds the same in and out of view; the driver clicks at the same point
  // (`co.ownPoint`, computed again when it acts).
  const OWN_POINTS = [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.1, 0.5], [0.9, 0.5], [0.5, 0.25], [0.5, 0.75]];
  function ownPoint(el, inner) {
    const box = el.getBoundingClientRect();
    const holders = new Set();
    for (const control of inner) {
      for (let n = control; n && n !== el && !holders.has(n); n = parentOf(n)) holders.add(n);
    }
    const rects = [];
    for (const n of holders) {
      if (n.nodeType === Node.ELEMENT_NODE) rects.push(...n.getClientRects());
    }
    for (const [fx, fy] of OWN_POINTS) {
      const x = box.left + box.width * fx, y = box.top + box.height * fy;
      if (!rects.some((r) => x >= r.left && x < r.right && y >= r.top && y < r.bottom)) return [fx, fy];
    }
    return null;
  }
  // At act time: the own point of an element offered beside what it holds, from the controls offered in it now.
  co.ownPoint = (el) => {
    if (!co.ownPoints.has(el)) return null;
    const within = (n) => { for (let m = parentOf(n); m; m = parentOf(m)) if (m === el) return true; return false; };
    const inner = [...co.offered].filter((n) => n !== el && within(n));
    return ownPoint(el, inner);
  };

  // Take back the one pointer-only clickable inside a clone (a listening element takes its place).
  function unmarkWeak(c) {
    const found = c.querySelector("[data-co-role=clickable]");
    if (!found) return;
    co.offered.delete(co.byId.get(found.getAttribute("data-co-id")));
    co.byId.delete(found.getAttribute("data-co-id"));
    if (markers.has(found)) {
      found.remove();
      return;
    }
    for (const attribute of [...found.attributes]) {
      if (attribute.name.startsWith("data-co-")) found.removeAttribute(attribute.name);
    }
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
  // Within LIMITS: children nested too deep are left out (counted once for their parent), and the walk stops at
  // the element limit.
  function walkChildren(node, into, textShown, flags) {
    const children = childrenOf(node);
    if (depth >= LIMITS.depth) {
      if (children.length) cut.deep++;
      return;
    }
    depth++;
    try {
      for (const child of children) {
        if (child.nodeType === Node.TEXT_NODE) {
          if (child.data && textShown) into.appendChild(out.createTextNode(take(child.data)));
        } else if (child.nodeType === Node.ELEMENT_NODE) {
          if (visited >= LIMITS.nodes) {
            cut.nodes = true;
            break;
          }
          visited++;
          visit(child, into, flags);
        }
      }
    } finally {
      depth--;
    }
  }

  function visit(el, into, flags) {
    const tag = el.localName;
    const svg = el.namespaceURI === SVG_NS;
    if (svg ? SVG_SKIP.has(tag) : SKIP.has(tag)) return;
    if (isHidden(el)) {
      // An aria-hidden, inert or sizeless sentinel still scrolls into view (an IntersectionObserver fires for it): found,
      // never offered. One the browser does not render (display:none) never does.
      if (!svg && !(flags & IN_CONTROL) && loadsOnScroll(el) && !behindModal(el) && el.checkVisibility()
          && !roleOf(el)) sentinels.push(el);
      return;
    }
    if (behindModal(el) && !modalHolders.has(el)) return;  // inert behind the open modal dialog: its text too
    const invisible = isInvisible(el);
    if (!svg && (tag === "iframe" || tag === "frame")) {
      let doc = null;
      try { doc = el.contentDocument; } catch (e) { /* cross-origin */ }
      if (doc && doc.body && !invisible) {
        listen(doc);
        const frame = into.appendChild(out.createElement("div"));
        frame.setAttribute("data-co-frame", "");
        walkChildren(doc.body, frame, !isInvisible(doc.body), (flags & IN_CONTROL) | heardIn(doc));
      }
      return;
    }
    const role = roleOf(el);
    if (role && !invisible && isOffPage(el)) return;
    const style = getComputedStyle(el);
    if (style.position === "fixed" || style.position === "sticky") pinnedSeen = true;
    const pointer = style.cursor === "pointer";
    const inSvg = svg && tag !== "foreignObject";
    const heard = listens(el) || (el.shadowRoot !== null && listens(el.shadowRoot));
    const below = (flags & (IN_CONTROL | HEARD | NEAR | UNSEEN_TEXT)) | (inSvg ? IN_SVG : 0) | (pointer ? POINTER : 0)
      | (heard ? HEARD : 0) | (heard || el.hasAttribute("onclick") ? NEAR : 0) | (hidesText(el, style) ? UNSEEN_TEXT : 0)
      | (dragsItems(el) ? DRAG_LIST : 0);
    const textSeen = !(flags & UNSEEN_TEXT) && !(below & UNSEEN_TEXT) && textShows(el, style);
    const cloneTag = !svg && tag !== "img" && !RAW_TEXT.has(tag) && /^[a-z][a-z0-9-]*$/.test(tag) ? tag : "span";
    const c = into.appendChild(out.createElement(cloneTag));
    if (!BLOCK_TAGS.has(tag) && BLOCKISH.test(style.display)) c.setAttribute("data-co-block", "");
    if (invisible) {
      // visibility:hidden: neither this element nor its text shows, but a descendant may set visible. A hidden
      // spinner at a list's end is still a sentinel (an IntersectionObserver fires for it).
      if (!(flags & IN_CONTROL) && !role && loadsOnScroll(el)) sentinels.push(el);
      if (tag !== "select" && tag !== "textarea" && tag !== "option" && tag !== "optgroup") {
        walkChildren(el, c, false, below);
      }
      if (!c.textContent.trim() && !c.querySelector("[data-co-id]")) c.remove();
      return;
    }
    if (role && isOffered(el)) {
      mark(el, c, role);
      strongOffered++;
      if (tag === "input" || tag === "select" || tag === "textarea" || tag === "img" || el.isContentEditable) return;
      walkChildren(el, c, !inSvg && textSeen, below | IN_CONTROL);
      return;
    } else if (tag === "label" && el.control && isVisibleControl(el.control)) {
      // The label's text is the control's name; the renderer can leave it out.
      c.setAttribute("data-co-label-for", idFor(el.control));
      co.offered.add(el);
      offeredList.push(el);
      strongOffered++;
      walkChildren(el, c, textSeen, below | IN_CONTROL);
      return;
    } else if (tag === "select" || tag === "textarea" || tag === "option" || tag === "optgroup") {
      return;
    }
    if (tag === "br") return;
    if (tag === "canvas") {
      // Its fallback content does not show. Offered with a listener of its own, or as the outermost pointer under
      // one, like any clickable: a click at a point of it is how a person uses it.
      const own = listens(el) || el.hasAttribute("onclick");
      if (!role && !(flags & IN_CONTROL) && (own || (pointer && !(flags & POINTER) && flags & HEARD))
          && canOfferClickable(el)) {
        markClickable(el, c);
        if (own) strongOffered++;
        else weakOffered++;
      } else {
        c.remove();
      }
      return;
    }
    if (!(flags & IN_CONTROL) && !role && loadsOnScroll(el)) sentinels.push(el);
    const strongBefore = strongOffered, weakBefore = weakOffered, offeredBefore = offeredList.length;
    let point = null;
    if (tag !== "img") walkChildren(el, c, !inSvg && textSeen, below);
    const document_ = el.ownerDocument;
    if (role || flags & IN_CONTROL || el === document_.body || el === document_.documentElement) {
      if (tag === "img" || (inSvg && !c.textContent.trim() && !c.querySelector("[data-co-id]"))) c.remove();
      return;  // a control that is not offered is no clickable either
    }
    const listened = listens(el) || el.hasAttribute("onclick");
    const innerStrong = strongOffered - strongBefore, innerWeak = weakOffered - weakBefore;
    if (listened && innerStrong === 0 && innerWeak <= 1 && canOfferClickable(el)) {
      if (innerWeak === 1) {
        unmarkWeak(c);
        weakOffered--;
      }
      markClickable(el, c);
      strongOffered++;
    } else if (listened && !(below & DRAG_LIST)
               && (point = ownPoint(el, offeredList.slice(offeredBefore).filter((n) => co.offered.has(n))))
               && canOfferClickable(el, point)) {
      markClickable(el, c);  // a target of its own beside the controls it holds, which stay
      co.ownPoints.set(el, point);
      strongOffered++;
    } else if (!listened && (flags & DRAG_LIST || el.getAttribute("draggable") === "true") && innerStrong === 0
               && innerWeak === 0 && canOfferClickable(el)) {
      markClickable(el, c);  // an item of a list that drags its items, or an HTML5 drag source: dragged from its point
      strongOffered++;
    } else if (!listened && hovers(el) && innerStrong === 0 && innerWeak === 0 && canOfferClickable(el)) {
      markClickable(el, c);  // reacts only to the pointer passing over it: a target of `hover`; inside a listening
      weakOffered++;  // element (an icon swapping its image in a clickable), that element takes its place
    } else if (!listened && focusable(el) && flags & NEAR && innerStrong === 0 && canOfferClickable(el)) {
      markClickable(el, c);  // a widget's focusable part (a slider's handle): where its keys go
      strongOffered++;
    } else if (!listened && pointer && !(flags & POINTER) && flags & HEARD && innerStrong === 0
               && innerWeak === 0 && canOfferClickable(el)) {
      markClickable(el, c);
      weakOffered++;
    }
    // An image, or SVG drawing, without controls: nothing of it shows in the text.
    if ((tag === "img" || inSvg) && !c.hasAttribute("data-co-id") && !c.textContent.trim()
        && !c.querySelector("[data-co-id]")) c.remove();
  }

  // The role and name an annotation would offer an element with now (a role-less one as a clickable): what the
  // driver re-checks when it acts on a control, and while its click's events are dispatched (adapter/driver.py).
  co.identify = (el) => {
    const role = roleOf(el) || "clickable";
    const [name, from] = offeredName(el, role);
    return [role, role === "clickable" ? clickableName(name) : name, from || ""];
  };

  listen(document);
  const root = out.createElement("body");
  const start = document.body || document.documentElement;
  walkChildren(start, root, !isInvisible(start), heardIn(document));
  if (cut.nodes) root.setAttribute("data-co-cut-nodes", String(LIMITS.nodes));
  if (cut.deep) {
    root.setAttribute("data-co-cut-depth", String(cut.deep));
    root.setAttribute("data-co-depth", String(LIMITS.depth));
  }
  if (cut.chars) root.setAttribute("data-co-cut-chars", String(cut.chars));
  const modal = activeModal(document);
  if (modal) root.setAttribute("data-co-modal", boxName(modal));
  if (modal && unseenModals.has(modal)) root.setAttribute("data-co-modal-unseen", "");
  // a frame's modal dialog leaves that frame's page out (the frame was walked: no modal of the top page hides it)
  const framed = [...modals].filter(([doc, m]) => doc !== document && m).map(([, m]) => boxName(m));
  if (framed.length) root.setAttribute("data-co-frame-modals", JSON.stringify(framed));
  if (pinnedSeen) markCovered(root);
  co.sentinels = sentinels;
  if (sentinels.length) root.setAttribute("data-co-loads-more", String(sentinels.length));
  return root.outerHTML;
}
