/** `coral-node coralize <url>`: the shared codec (@coral/names), no running node needed. */
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers.js';

async function coralize(env: Record<string, string>, ...args: string[]) {
  const r = await runCli(['coralize', ...args], env);
  return { ...r, out: r.out.trim() };
}

describe('coral-node coralize', () => {
  it('gives https URLs the one-label name on the TLS port', async () => {
    expect((await coralize({}, 'https://www.example.com/a.css?v=1')).out).toBe(
      'https://www-example-com.nyud.net:8443/a.css?v=1',
    );
    expect((await coralize({}, 'https://shop.example.com:8443/', '--tls-port', '443')).out).toBe(
      'https://shop-example-com---8443.nyud.net/',
    );
    expect(
      (
        await coralize(
          { CORAL_ZONE: 'cdn.test', CORAL_PROXY_TLS_PORT: '9443' },
          'https://bücher.ch/',
        )
      ).out,
    ).toBe('https://xn--bcher-ch-65a.cdn.test:9443/');
  });

  it('keeps the legacy form for http URLs, one-label on request, and says why it fell back', async () => {
    expect((await coralize({}, 'http://www.example.com:8080/a')).out).toBe(
      'http://www.example.com.8080.nyud.net:8090/a',
    );
    expect((await coralize({}, 'http://www.example.com/a', '--form', 'one-label')).out).toBe(
      'https://www-example-com---h.nyud.net:8443/a',
    );
    const long = `http://${'a'.repeat(60)}.com/`;
    const r = await coralize({}, long, '--form', 'one-label', '--verbose');
    expect(JSON.parse(r.out)).toMatchObject({
      form: 'legacy',
      url: `http://${'a'.repeat(60)}.com.nyud.net:8090/`,
      fallback: { code: 'NAMES_ERR_LABEL_TOO_LONG' },
    });
  });

  it('refuses what has no Coralized name with the codec error code', async () => {
    const r = await coralize({}, `https://${'a'.repeat(60)}.com/`);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/NAMES_ERR_LABEL_TOO_LONG/);
    expect((await coralize({}, 'ftp://x.example/')).err).toMatch(
      /NAMES_ERR_BAD_URL|NAMES_ERR_BAD_SCHEME/,
    );
    expect((await coralize({}, 'https://x.example/', '--form', 'sideways')).code).toBe(1);
  });
});
