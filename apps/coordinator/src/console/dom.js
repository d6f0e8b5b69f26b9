// The console's whole rendering layer: elements from plain calls, text always as text nodes
// (never innerHTML), so nothing the API answers can become markup.

const SVG_NS = 'http://www.w3.org/2000/svg';
const PROPERTIES = new Set(['value', 'checked', 'disabled', 'hidden', 'required', 'selected', 'open']);

function apply(element, props) {
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (PROPERTIES.has(name)) element[name] = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: `h('button', { type: 'button', onclick }, 'Trip')`. */
export function h(tag, props, ...children) {
  const element = document.createElement(tag);
  apply(element, props);
  append(element, children);
  return element;
}

/** An SVG element, for the charts. */
export function svg(tag, props, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  apply(element, props);
  append(element, children);
  return element;
}

/** Replaces what `container` shows. */
export function render(container, ...children) {
  container.replaceChildren();
  append(container, children);
}

/**
 * The page's element with this id: index.html has every one the console asks for.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`index.html has no #${id}`);
  return element;
}
