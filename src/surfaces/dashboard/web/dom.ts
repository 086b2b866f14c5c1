/**
 * A tiny element builder: text always goes in as text nodes (never parsed as HTML). The one place
 * that sets innerHTML is markdown.ts, whose renderer escapes every raw HTML tag.
 */
type Child = Node | string | number | null | undefined | false;
type Props = {
  class?: string;
  text?: string;
  title?: string;
  on?: { [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
  attrs?: Record<string, string>;
} & Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  const { class: className, text, on, attrs, ...rest } = props;
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  for (const [name, value] of Object.entries(attrs ?? {})) el.setAttribute(name, value);
  for (const [name, value] of Object.entries(rest)) {
    if (value !== undefined) (el as unknown as Record<string, unknown>)[name] = value;
  }
  for (const [name, handler] of Object.entries(on ?? {})) {
    el.addEventListener(name, handler as EventListener);
  }
  append(el, ...children);
  return el;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function count(n: unknown): string {
  return typeof n === 'number' ? n.toLocaleString() : '—';
}
