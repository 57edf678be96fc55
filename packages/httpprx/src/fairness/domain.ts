/** The origin domain a URL is accounted to (its host name, without scheme or port). */
export function domainOf(url: string): string {
  const start = url.indexOf('//') + 2;
  let end = url.indexOf('/', start);
  if (end < 0) end = url.length;
  const authority = url.slice(start, end);
  if (authority.startsWith('[')) return authority.slice(0, authority.indexOf(']') + 1);
  const colon = authority.lastIndexOf(':');
  return colon < 0 ? authority : authority.slice(0, colon);
}
