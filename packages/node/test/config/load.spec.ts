import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ADMIN_PORT,
  DEFAULT_DNS_PORT,
  ENV_FIELDS,
  envName,
  loadConfig,
  loadStartConfig,
  MAX_WORKERS,
  resolveAddresses,
  resolveBootstrap,
} from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'coral-config-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe('CORAL_ERR_CONFIG_INVALID');
    return [...(err as ConfigError).issues];
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the first-run defaults of DESIGN.md with no file and no environment', () => {
    const c = loadConfig();
    expect(c.dns.host).toBe('127.0.0.1');
    expect(c.dns.port).toBe(DEFAULT_DNS_PORT);
    expect(c.proxy.port).toBe(8090);
    expect(c.host).toBe('0.0.0.0');
    expect(c.dsht.port).toBe(8091);
    expect(c.admin.host).toBe('127.0.0.1');
    expect(c.admin.port).toBe(DEFAULT_ADMIN_PORT);
    expect(c.dataDir).toBe('./data');
    expect(c.zone).toBe('nyud.net');
    expect(c.allowPrivateOrigins).toBe(false);
    expect(c.hosts).toEqual({});
    expect(c.admin.token).toBeUndefined();
  });

  it('reads YAML and JSON files, environment overriding the file', () => {
    const yamlPath = file(
      'a.yaml',
      'zone: Coral.Test\nproxy:\n  port: 9000\nbootstrap: ["node1:8091"]\nhosts:\n  node1: 127.0.0.11\n',
    );
    const c = loadConfig({ file: yamlPath, env: { CORAL_PROXY_PORT: '9100', CORAL_REGION: 'eu' } });
    expect(c.zone).toBe('coral.test');
    expect(c.proxy.port).toBe(9100);
    expect(c.region).toBe('eu');
    expect(c.bootstrap).toEqual(['node1:8091']);
    const jsonPath = file('b.json', JSON.stringify({ dns: { port: 5300, answerCount: 3 } }));
    const j = loadConfig({ env: { CORAL_CONFIG: jsonPath } });
    expect(j.dns.port).toBe(5300);
    expect(j.dns.answerCount).toBe(3);
    expect(j.dns.host).toBe('127.0.0.1');
  });

  it('parses lists, maps, booleans and nameservers from the environment', () => {
    const c = loadConfig({
      env: {
        CORAL_BOOTSTRAP: 'node1:8091, 127.0.0.12:8091',
        CORAL_HOSTS: 'node1=127.0.0.11,www.origin.test=127.0.0.1',
        CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
        CORAL_DNS_NAMESERVERS: 'ns1.nyud.net=127.0.0.11',
        CORAL_ADMIN_TOKEN: 'a-long-enough-token',
        PATH: '/usr/bin',
      },
    });
    expect(c.bootstrap).toEqual(['node1:8091', '127.0.0.12:8091']);
    expect(c.hosts).toEqual({ node1: '127.0.0.11', 'www.origin.test': '127.0.0.1' });
    expect(c.allowPrivateOrigins).toBe(true);
    expect(c.dns.nameservers).toEqual([{ name: 'ns1.nyud.net', ip: '127.0.0.11' }]);
    expect(c.admin.token).toBe('a-long-enough-token');
  });

  it('reports every problem at once, each with its path', () => {
    const path = file(
      'bad.yaml',
      [
        'zone: "not a zone!"',
        'proxy:',
        '  port: 70000',
        '  prot: 1',
        'dns:',
        '  views:',
        '    - cidr: 10.0.0.0/33',
        '      region: eu',
        'hosts:',
        '  node1: not-an-ip',
        'bootstrap: [nohostport]',
      ].join('\n'),
    );
    const issues = issuesOf(() =>
      loadConfig({ file: path, env: { CORAL_DNS_PORT: 'fifty', CORAL_NOPE: '1' } }),
    );
    const paths = issues.map((i) => i.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'zone',
        'proxy.port',
        'proxy',
        'dns.views.0.cidr',
        'hosts.node1',
        'bootstrap.0',
        'env CORAL_DNS_PORT',
        'env CORAL_NOPE',
      ]),
    );
    expect(issues.length).toBeGreaterThanOrEqual(8);
    expect(issues.find((i) => i.path === 'env CORAL_DNS_PORT')?.message).toMatch(/integer/);
  });

  it('reports a bootstrap entry without a port once, saying what to write', () => {
    const issues = issuesOf(() =>
      loadConfig({ env: { CORAL_BOOTSTRAP: 'node1,[::1],::1,10.0.0.1:99999,node2:8091' } }),
    );
    expect(issues.map((i) => i.path)).toEqual([
      'bootstrap.0',
      'bootstrap.1',
      'bootstrap.2',
      'bootstrap.3',
    ]);
    expect(issues[0]!.message).toBe('"node1" has no port: write host:port, e.g. node1:8091');
    expect(issues[1]!.message).toMatch(/must be host:port \(IPv6 as \[addr\]:port\)/);
    expect(issues[2]!.message).toMatch(/e\.g\. \[::1\]:8091/);
    expect(issues[3]!.message).toMatch(/port must be 1-65535/);
  });

  it('refuses a wildcard or malformed advertise address', () => {
    for (const wildcard of ['0.0.0.0', '::', '0:0:0:0:0:0:0:0']) {
      const issues = issuesOf(() => loadConfig({ env: { CORAL_ADVERTISE: wildcard } }));
      expect(issues).toEqual([
        {
          path: 'advertise',
          message: expect.stringMatching(/not the wildcard/),
          source: 'CORAL_ADVERTISE',
          given: JSON.stringify(wildcard),
        },
      ]);
    }
    expect(issuesOf(() => loadConfig({ env: { CORAL_ADVERTISE: 'a b' } }))[0]?.message).toMatch(
      /IP address or a host name/,
    );
  });

  it('reports unreadable and unparseable files and wrong top-level types', () => {
    expect(issuesOf(() => loadConfig({ file: join(dir, 'missing.yaml') }))[0]?.message).toMatch(
      /cannot read/,
    );
    const broken = file('broken.json', '{"zone": ');
    expect(issuesOf(() => loadConfig({ file: broken }))[0]?.message).toMatch(/cannot parse/);
    const list = file('list.yaml', '- 1\n- 2\n');
    expect(issuesOf(() => loadConfig({ file: list }))[0]?.message).toMatch(/object/);
  });

  it('refuses two services on one port and address, and a view naming both nodes and a region', () => {
    const ports = issuesOf(() =>
      loadConfig({ overrides: { admin: { host: '0.0.0.0', port: 8090 } } }),
    );
    expect(ports).toEqual([
      {
        path: 'admin.port',
        message: expect.stringMatching(/proxy.port/),
        source: 'overrides',
        given: '8090',
      },
    ]);
    const views = issuesOf(() =>
      loadConfig({
        overrides: { dns: { views: [{ cidr: '10.0.0.0/8', nodes: ['a'], region: 'eu' }] } },
      }),
    );
    expect(views.map((i) => i.path)).toEqual(['dns.views.0']);
  });

  it('names, for each problem, where the value came from and the value given, never a secret', () => {
    const path = file('sources.yaml', 'proxy:\n  port: 70000\nadmin:\n  host: 0.0.0.0\n');
    let err: ConfigError | undefined;
    try {
      loadConfig({
        file: path,
        env: {
          CORAL_ZONE: 'not a zone',
          CORAL_DNS_PORT: 'fifty',
          CORAL_ADMIN_TOKEN: 'short-secret',
          CORAL_FLEET_KEYS: 'not-a-key-secret',
        },
      });
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const lines = err!.message.split('\n').map((l) => l.trim());
    expect(lines).toEqual(
      expect.arrayContaining([
        '- env CORAL_DNS_PORT: dns.port must be an integer, got "fifty"',
        '- zone: must be a DNS name such as nyud.net (given "not a zone" in CORAL_ZONE)',
        `- proxy.port: Too big: expected number to be <=65535 (given 70000 in file ${path})`,
        '- admin.token: must be at least 16 characters (given [redacted] in CORAL_ADMIN_TOKEN)',
        expect.stringMatching(/^- fleet\.keys\.0: .* \(given \[redacted\] in CORAL_FLEET_KEYS\)$/),
      ]),
    );
    expect(err!.message).not.toContain('short-secret');
    expect(err!.message).not.toContain('not-a-key-secret');
    // A value nobody set is the default's, and says so.
    const byDefault = issuesOf(() =>
      loadConfig({ env: { CORAL_ADMIN_HOST: '0.0.0.0', CORAL_PROXY_TLS_PORT: '8092' } }),
    );
    expect(byDefault).toMatchObject([{ path: 'admin.port', source: 'default', given: '8092' }]);
  });

  it('refuses a short admin token', () => {
    expect(issuesOf(() => loadConfig({ env: { CORAL_ADMIN_TOKEN: 'short' } }))[0]?.path).toBe(
      'admin.token',
    );
  });

  it('takes workers as an integer or auto, from the file or CORAL_WORKERS, and refuses the rest', () => {
    expect(loadConfig().workers).toBe(1);
    expect(loadConfig({ env: { CORAL_WORKERS: '3' } }).workers).toBe(3);
    expect(loadConfig({ env: { CORAL_WORKERS: 'auto' } }).workers).toBe(
      Math.min(availableParallelism(), MAX_WORKERS),
    );
    expect(loadConfig({ file: file('w.yaml', 'workers: auto\n') }).workers).toBeGreaterThanOrEqual(
      1,
    );
    expect(loadConfig({ file: file('w2.json', '{"workers": 2}') }).workers).toBe(2);
    expect(issuesOf(() => loadConfig({ env: { CORAL_WORKERS: 'two' } }))).toEqual([
      { path: 'env CORAL_WORKERS', message: 'workers must be auto or an integer, got "two"' },
    ]);
    for (const bad of [0, -1, 1.5, MAX_WORKERS + 1, 'all', true]) {
      const issues = issuesOf(() => loadConfig({ overrides: { workers: bad } }));
      expect(issues.map((i) => [i.path, i.message])).toEqual([
        ['workers', `must be auto or an integer from 1 to ${MAX_WORKERS}`],
      ]);
    }
  });

  it('takes log.access from the file or CORAL_LOG_ACCESS_*, and refuses what is out of range', () => {
    expect(loadConfig().log.access).toEqual({ format: 'json', destination: 'stdout', sample: 1 });
    const env = {
      CORAL_LOG_ACCESS_FORMAT: 'combined',
      CORAL_LOG_ACCESS_DESTINATION: '/var/log/coral/access.log',
      CORAL_LOG_ACCESS_SAMPLE: '0.25',
    };
    expect(loadConfig({ env }).log.access).toEqual({
      format: 'combined',
      destination: '/var/log/coral/access.log',
      sample: 0.25,
    });
    expect(
      loadConfig({ file: file('al.yaml', 'log:\n  access:\n    destination: "off"\n') }).log,
    ).toEqual({ level: 'info', access: { format: 'json', destination: 'off', sample: 1 } });
    const issues = issuesOf(() =>
      loadConfig({
        env: { CORAL_LOG_ACCESS_FORMAT: 'clf', CORAL_LOG_ACCESS_SAMPLE: '1.5' },
        overrides: { log: { access: { destination: '' } } },
      }),
    );
    expect(issues.map((i) => i.path).sort()).toEqual([
      'log.access.destination',
      'log.access.format',
      'log.access.sample',
    ]);
  });

  it('takes proxy.heuristicMaxSeconds and proxy.negativeTtlSeconds, and refuses what is not a whole non-negative number', () => {
    const d = loadConfig().proxy;
    expect([d.heuristicMaxSeconds, d.negativeTtlSeconds]).toEqual([86_400, 60]);
    const env = {
      CORAL_PROXY_HEURISTIC_MAX_SECONDS: '3600',
      CORAL_PROXY_NEGATIVE_TTL_SECONDS: '0',
    };
    const c = loadConfig({ env }).proxy;
    expect([c.heuristicMaxSeconds, c.negativeTtlSeconds]).toEqual([3600, 0]);
    const f = file('neg.yaml', 'proxy:\n  negativeTtlSeconds: 5\n');
    expect(loadConfig({ file: f }).proxy.negativeTtlSeconds).toBe(5);
    const issues = issuesOf(() =>
      loadConfig({
        env: { CORAL_PROXY_HEURISTIC_MAX_SECONDS: '-1' },
        overrides: { proxy: { negativeTtlSeconds: 1.5 } },
      }),
    );
    expect(issues.map((i) => i.path).sort()).toEqual([
      'proxy.heuristicMaxSeconds',
      'proxy.negativeTtlSeconds',
    ]);
  });

  it('returns a deeply frozen object', () => {
    const c = loadConfig({ env: { CORAL_BOOTSTRAP: '127.0.0.2:8091' } });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.proxy)).toBe(true);
    expect(Object.isFrozen(c.bootstrap)).toBe(true);
    expect(() => (c.bootstrap as string[]).push('x')).toThrow();
  });

  it('derives every environment variable name from its field path', () => {
    expect(envName('proxy.diskBudgetBytes')).toBe('CORAL_PROXY_DISK_BUDGET_BYTES');
    expect(envName('allowPrivateOrigins')).toBe('CORAL_ALLOW_PRIVATE_ORIGINS');
    expect(new Set(ENV_FIELDS.map(([p]) => envName(p))).size).toBe(ENV_FIELDS.length);
  });
});

describe('loadStartConfig', () => {
  const nxdomain = async (name: string): Promise<string> => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  };

  it('reports an advertise name that does not resolve as a configuration problem', async () => {
    const err = await loadStartConfig({
      env: { CORAL_ADVERTISE: 'ghost.invalid' },
      lookup: nxdomain,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([
      {
        path: 'advertise',
        message: '"ghost.invalid" does not resolve (ENOTFOUND; not in hosts either)',
        source: 'CORAL_ADVERTISE',
        given: '"ghost.invalid"',
      },
    ]);
  });

  it('lists that problem together with every other one', async () => {
    const err = (await loadStartConfig({
      env: {
        CORAL_ADVERTISE: 'ghost.invalid',
        CORAL_BOOTSTRAP: 'node1',
        CORAL_DNS_PORT: 'fifty',
      },
      lookup: nxdomain,
    }).catch((e: unknown) => e)) as ConfigError;
    expect(err.issues.map((i) => i.path).sort()).toEqual([
      'advertise',
      'bootstrap.0',
      'env CORAL_DNS_PORT',
    ]);
    expect(err.message).toMatch(/invalid configuration \(3 problems\)/);
  });

  it('refuses a name that resolves to a wildcard, and accepts one mapped in hosts', async () => {
    const wild = (await loadStartConfig({
      env: { CORAL_ADVERTISE: 'any', CORAL_HOSTS: 'any=0.0.0.0' },
      lookup: nxdomain,
    }).catch((e: unknown) => e)) as ConfigError;
    expect(wild.issues[0]?.message).toMatch(/resolves to the wildcard 0\.0\.0\.0/);
    const ok = await loadStartConfig({
      env: { CORAL_ADVERTISE: 'node1', CORAL_HOSTS: 'node1=127.0.0.31' },
      lookup: nxdomain,
    });
    expect(ok.advertise).toBe('node1');
  });
});

describe('resolveBootstrap', () => {
  it('resolves names through hosts first, keeps the ones that fail, and finds itself', async () => {
    const c = loadConfig({
      env: {
        CORAL_BOOTSTRAP: 'node1:8091,[::1]:8091,ghost:8091,node2:8091,127.0.0.21:9999',
        CORAL_HOSTS: 'node1=127.0.0.11,node2=127.0.0.21',
      },
    });
    const r = await resolveBootstrap(c, { ips: ['127.0.0.21'], port: 8091 }, async (name) => {
      throw new Error(`no such name ${name}`);
    });
    expect(r.contacts).toEqual(['127.0.0.11:8091', '[::1]:8091', '127.0.0.21:9999']);
    expect(r.unresolved).toEqual([{ entry: 'ghost:8091', reason: 'no such name ghost' }]);
    expect(r.self).toBe(true);
  });
});

describe('resolveAddresses', () => {
  it('resolves advertise through hosts first', async () => {
    const c = loadConfig({
      env: {
        CORAL_HOST: '127.0.0.21',
        CORAL_ADVERTISE: 'node2',
        CORAL_BOOTSTRAP: 'node1:8091,[::1]:8091,ghost:8091',
        CORAL_HOSTS: 'node1=127.0.0.11,node2=127.0.0.21',
      },
    });
    const r = await resolveAddresses(c, async (name) => {
      throw new Error(`no such name ${name}`);
    });
    expect(r.advertiseIp).toBe('127.0.0.21');
    expect(r.bind).toEqual({
      proxy: '127.0.0.21',
      dsht: '127.0.0.21',
      dns: '127.0.0.1',
      admin: '127.0.0.1',
    });
  });

  it('throws a ConfigError when advertise does not resolve', async () => {
    const c = loadConfig({ env: { CORAL_ADVERTISE: 'ghost' } });
    await expect(
      resolveAddresses(c, async () => {
        throw new Error('nope');
      }),
    ).rejects.toMatchObject({ code: 'CORAL_ERR_CONFIG_INVALID', issues: [{ path: 'advertise' }] });
  });

  it('advertises 127.0.0.1 when every service binds a wildcard', async () => {
    const r = await resolveAddresses(loadConfig());
    expect(r.advertiseIp).toBe('127.0.0.1');
    // The DSHT binds the advertised address; the proxy keeps its wildcard.
    expect(r.bind.dsht).toBe('127.0.0.1');
    expect(r.bind.proxy).toBe('0.0.0.0');
    const named = await resolveAddresses(
      loadConfig({ env: { CORAL_ADVERTISE: 'node1', CORAL_HOSTS: 'node1=127.0.0.31' } }),
    );
    expect(named.bind.dsht).toBe('127.0.0.31');
  });
});
