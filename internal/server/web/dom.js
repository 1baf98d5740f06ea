// dom.js — the only way the page builds DOM: createElement, setAttribute and
// text nodes. No innerHTML anywhere, so nothing a model, a web page or the
// server wrote can become markup or script.

/**
 * el(tag, props, ...children) creates an element.
 *   props.class   → className
 *   props.text    → textContent
 *   props.dataset → data-* attributes
 *   any other key → setAttribute(key, String(value)) (skipped when null,
 *                   undefined or false; `true` sets an empty attribute).
 * Event-handler attributes (on…) and style= are refused: the CSP forbids
 * them and they would be a way to run data as code.
 * Children: nodes, strings (become text nodes), arrays, null/false (skipped).
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = String(value);
    else if (key === 'dataset') {
      for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) node.dataset[k] = String(v);
    } else {
      const name = key.toLowerCase();
      if (name.startsWith('on') || name === 'style' || name === 'srcdoc') throw new Error(`el: refusing attribute ${key}`);
      node.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(node, children);
  return node;
}

/** append adds children (nodes, strings, nested arrays) to parent. */
export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** clear removes every child of node. */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** $ finds an element by id; it throws when the page lacks it (a bug). */
export function $(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`missing #${id}`);
  return node;
}

/** show/hide toggle the hidden attribute. */
export function show(node, visible = true) {
  node.hidden = !visible;
  return node;
}

/** truncate cuts s to max characters with an ellipsis. */
export function truncate(s, max) {
  s = String(s ?? '');
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

/** oneLine folds whitespace runs (new lines too) into single spaces. */
export function oneLine(s) {
  return String(s ?? '').replace(/\s+/g, ' ').trim();
}
