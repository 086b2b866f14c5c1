/**
 * Model text to HTML, safely: markdown-it with `html: false` escapes every raw HTML tag in the
 * source (a model answer with <script> or <img onerror> renders as that text), and its link check
 * refuses javascript:, vbscript:, file: and data: (except images) URLs. Links open in a new tab
 * without an opener or referrer.
 */
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: false, breaks: true, typographer: false });

const defaultLinkOpen =
  md.renderer.rules.link_open ??
  ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  token.attrSet('target', '_blank');
  token.attrSet('rel', 'noopener noreferrer nofollow');
  return defaultLinkOpen(tokens, idx, options, env, self);
};
// Images would fetch from wherever the model points (and the CSP refuses them anyway): show the link.
md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx]!;
  return md.utils.escapeHtml(`[image: ${token.content || token.attrGet('src') || ''}]`);
};

export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** An element holding `text` rendered as markdown. */
export function markdownElement(text: string, className = 'md'): HTMLDivElement {
  const el = document.createElement('div');
  el.className = className;
  el.innerHTML = renderMarkdown(text);
  return el;
}
