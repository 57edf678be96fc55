/**
 * The dashboard's DOM helpers. Every piece of text from the node goes in through `textContent`
 * (a string child of {@link h}), never as HTML: URLs and DNS names are chosen by strangers.
 */

export type Child = Node | string | number | null | undefined | false;

export function h(
  tag: string,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'number' ? String(c) : c);
  }
  return el;
}

export function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing`);
  return el;
}

export function fill(id: string, ...children: Child[]): void {
  byId(id).replaceChildren(
    ...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false),
  );
}

/** A tile: its shown value, the exact number behind it (data-value) and a line under it. */
export function tile(id: string, value: number | null, shown: string, sub: string): void {
  const el = byId(id);
  el.textContent = shown;
  el.dataset.value = value === null ? '' : String(value);
  byId(`${id}-sub`).textContent = sub || '\u00a0';
}

export function bar(share: number): HTMLElement {
  const fillEl = h('span');
  fillEl.style.width = `${Math.max(0, Math.min(1, share)) * 100}%`;
  return h('div', { class: 'bar' }, fillEl);
}

export function table(head: (string | [string, string])[], rows: HTMLElement[]): HTMLElement {
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...head.map((c) => (Array.isArray(c) ? h('th', { class: c[1] }, c[0]) : h('th', {}, c))),
      ),
    ),
    h('tbody', {}, ...rows),
  );
}
