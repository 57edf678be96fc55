/**
 * The dashboard's traffic panels: the hottest URLs (a top-k sketch: counts may be over-estimated
 * by a bound shown with them) and the DNS answers by reason, with the recent ones.
 */
import { bar, byId, fill, h, table } from './dom.js';
import { fmtAgo, fmtInt, fmtPercent, shortId } from './format.js';
import type { View } from './view.js';

export function renderHot(view: View): void {
  const hot = view.hotUrls;
  byId('hot-count').textContent = `of ${fmtInt(hot.total)} requests`;
  if (hot.items.length === 0) {
    fill('hot-body', h('div', { class: 'empty' }, 'No client requests yet.'));
    return;
  }
  const max = hot.items[0]!.count;
  fill(
    'hot-body',
    table(
      [['#', 'num'], 'URL', ['Requests', 'num'], ['Share', 'num'], ''],
      hot.items.map((x, i) =>
        h(
          'tr',
          {},
          h('td', { class: 'num muted' }, i + 1),
          h('td', { class: 'url mono', title: x.url }, x.url),
          h(
            'td',
            {
              class: 'num',
              title: x.error > 0 ? `over-estimated by at most ${fmtInt(x.error)}` : 'exact',
            },
            x.error > 0 ? `≤ ${fmtInt(x.count)}` : fmtInt(x.count),
          ),
          h('td', { class: 'num' }, hot.total > 0 ? fmtPercent(x.count / hot.total) : '–'),
          h('td', {}, bar(max > 0 ? x.count / max : 0)),
        ),
      ),
    ),
  );
}

export function renderDns(view: View): void {
  const entries = Object.entries(view.totals.dns).sort((a, b) => b[1] - a[1]);
  const total = entries.reduce((a, [, n]) => a + n, 0);
  byId('dns-count').textContent = `${fmtInt(total)} answers`;
  fill(
    'dns-reasons',
    entries.length === 0
      ? h('div', { class: 'empty' }, 'No DNS answers yet.')
      : table(
          ['Reason', ['Answers', 'num'], ['Share', 'num'], ''],
          entries.map(([reason, n]) =>
            h(
              'tr',
              { 'data-reason': reason },
              h('td', { class: 'mono' }, reason),
              h('td', { class: 'num', 'data-value': String(n) }, fmtInt(n)),
              h('td', { class: 'num' }, fmtPercent(total > 0 ? n / total : null)),
              h('td', {}, bar(total > 0 ? n / total : 0)),
            ),
          ),
        ),
  );
  const recent = view.dnsRecent;
  fill(
    'dns-recent',
    recent.length === 0
      ? null
      : h(
          'div',
          {},
          h('h2', { class: 'sub' }, 'Recent answers'),
          table(
            ['Age', 'Resolver', 'Name', 'Reason', 'Answer'],
            recent.map((d) =>
              h(
                'tr',
                {},
                h('td', { class: 'num muted' }, fmtAgo(view.now - d.at)),
                h('td', { class: 'mono' }, d.client),
                h('td', { class: 'url mono', title: d.name }, d.name),
                h('td', { class: 'mono', title: d.detail }, d.method),
                h(
                  'td',
                  { class: 'mono' },
                  d.nodes.length ? d.nodes.map(shortId).join(' ') : d.rcode,
                ),
              ),
            ),
          ),
        ),
  );
}
