/**
 * deploy/kubernetes/, checked offline:
 * - every manifest validates against the Kubernetes API schemas (kubernetes-models: the API's
 *   OpenAPI schemas compiled to validators, shipped inside the npm package), and has no field the
 *   API does not know, as `kubectl apply`'s strict field validation requires (TypeScript's
 *   excess-property check against the same package's types, through the compiler API);
 * - the kustomization applies every file, and its generated Secret is what the pods refer to;
 * - the objects fit together (selectors, named ports and protocols, probes, volumes, annotations);
 * - the configuration the pods get (the ConfigMap's file, their environment and the image's ENV)
 *   is accepted by the node's own schema and agrees with the ports and names of the manifests.
 */
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { loadStartConfig } from '../../src/config/load.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const dir = join(root, 'deploy/kubernetes');

/** The API objects the manifests may hold: their model (schema) and their TypeScript type. */
const MODELS: Record<
  string,
  { model: new (data: never) => { validate(): void }; module: string; type: string }
> = {
  'v1/Namespace': {
    model: Namespace,
    module: 'kubernetes-models/v1/Namespace',
    type: 'INamespace',
  },
  'v1/ConfigMap': {
    model: ConfigMap,
    module: 'kubernetes-models/v1/ConfigMap',
    type: 'IConfigMap',
  },
  'v1/Secret': { model: Secret, module: 'kubernetes-models/v1/Secret', type: 'ISecret' },
  'v1/Service': { model: Service, module: 'kubernetes-models/v1/Service', type: 'IService' },
  'apps/v1/StatefulSet': {
    model: StatefulSet,
    module: 'kubernetes-models/apps/v1/StatefulSet',
    type: 'IStatefulSet',
  },
  'policy/v1/PodDisruptionBudget': {
    model: PodDisruptionBudget,
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    type: 'IPodDisruptionBudget',
  },
};

// Loosely typed views of the objects, for the cross-checks.
/* eslint-disable @typescript-eslint/no-explicit-any */
type Obj = Record<string, any>;
interface Manifest {
  where: string;
  doc: Obj;
}

function loadManifests(): Manifest[] {
  const out: Manifest[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    if (file === 'kustomization.yaml') continue;
    parseAllDocuments(readFileSync(join(dir, file), 'utf8')).forEach((d, i) => {
      expect(d.errors, `${file} #${i}`).toEqual([]);
      const doc = d.toJS() as Obj | null;
      if (doc) out.push({ where: `${file} #${i} ${doc.kind}/${doc.metadata?.name}`, doc });
    });
  }
  return out;
}

const keyOf = (doc: Obj) => `${doc.apiVersion}/${doc.kind}`;

/** Schema errors of each manifest ('' when valid). */
function schemaErrors(manifests: Manifest[]): string[] {
  return manifests.flatMap(({ where, doc }) => {
    const m = MODELS[keyOf(doc)];
    if (!m) return [`${where}: no schema for ${keyOf(doc)}`];
    try {
      new m.model(structuredClone(doc) as never).validate();
      return [];
    } catch (err) {
      return [`${where}: ${(err as Error).message}`];
    }
  });
}

/**
 * Fields the API does not know: each manifest becomes an object literal of its API type in a
 * virtual TypeScript file type-checked against kubernetes-models' declarations, so any unknown
 * key at any depth is an excess-property error.
 */
function unknownFields(manifests: Manifest[]): string[] {
  const file = join(fileURLToPath(new URL('.', import.meta.url)), '__manifests__.ts');
  const used = [...new Set(manifests.map((m) => keyOf(m.doc)))].filter((k) => MODELS[k]);
  const lines = used.map((k) => `import type { ${MODELS[k]!.type} } from '${MODELS[k]!.module}';`);
  const where: string[] = [];
  manifests.forEach(({ where: w, doc }, i) => {
    const m = MODELS[keyOf(doc)];
    if (!m) return;
    where[lines.length] = w;
    lines.push(`export const m${i}: ${m.type} = ${JSON.stringify(doc)};`);
  });
  const text = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) =>
    name === file ? ts.createSourceFile(name, text, lang) : getSourceFile(name, lang, ...rest);
  host.fileExists = (name) => name === file || fileExists(name);
  host.readFile = (name) => (name === file ? text : readFile(name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line =
      d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const msg = ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n').pop();
    return `${where[line] ?? `line ${line}`}: ${msg}`;
  });
}

const manifests = loadManifests();
const find = (kind: string, name?: string): Obj => {
  const m = manifests.find((x) => x.doc.kind === kind && (!name || x.doc.metadata?.name === name));
  if (!m) throw new Error(`no ${kind} ${name ?? ''} in deploy/kubernetes`);
  return m.doc;
};
const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Obj;
const sts = find('StatefulSet');
const pod = sts.spec.template;
const container = pod.spec.containers[0] as Obj;
const portNamed = (name: string) => (container.ports as Obj[]).find((p) => p.name === name);

/** What a pod of `stsDoc` runs with: the image's ENV, the container's environment, the ConfigMap. */
async function podConfig(stsDoc: Obj) {
  const c = stsDoc.spec.template.spec.containers[0] as Obj;
  // The image's ENV (runtime stage of the Dockerfile), then the container's environment.
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const imageEnv = Object.fromEntries(
    [...runtime.matchAll(/^ENV\s+(.*)$/gm)].flatMap((m) =>
      [...m[1]!.matchAll(/(\w+)=(\S+)/g)].map((kv) => [kv[1]!, kv[2]!]),
    ),
  );
  expect(imageEnv.CORAL_DATA_DIR).toBe('/data');
  const podIp = '10.244.1.7';
  const token = 'k8s-test-token-0123456789abcdef';
  const fleetKey = 'cd'.repeat(32);
  const secrets: Record<string, string> = { 'admin-token': token, 'fleet-keys': fleetKey };
  const env: Record<string, string> = { ...imageEnv };
  for (const e of c.env as Obj[]) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'status.podIP') env[e.name] = podIp;
    else if (e.valueFrom?.secretKeyRef) env[e.name] = secrets[e.valueFrom.secretKeyRef.key]!;
    else throw new Error(`no stand-in for ${e.name}`);
  }
  // CORAL_CONFIG names the ConfigMap's file where the pod mounts it.
  const configMount = (c.volumeMounts as Obj[]).find((m) => m.name === 'config')!;
  const cm = find('ConfigMap', 'coral-config');
  const key = Object.keys(cm.data)[0]!;
  expect(env.CORAL_CONFIG).toBe(`${configMount.mountPath}/${key}`);
  const file = join(mkdtempSync(join(tmpdir(), 'coral-k8s-')), key);
  writeFileSync(file, cm.data[key]);

  const config = await loadStartConfig({
    env: { ...env, CORAL_CONFIG: file },
    lookup: async (name) => {
      throw new Error(`unexpected lookup of ${name}`);
    },
  });
  return { config, podIp, token, fleetKey };
}

describe('deploy/kubernetes manifests', () => {
  it('validate against the Kubernetes API schemas', () => {
    expect(manifests.length).toBeGreaterThanOrEqual(6);
    expect(schemaErrors(manifests)).toEqual([]);
    // The validator does catch mistakes: a port that is not a number, a Service port missing.
    const broken = structuredClone(sts);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    expect(schemaErrors([{ where: 'broken', doc: broken }])[0]).toMatch(
      /containerPort must be integer/,
    );
    const svc = structuredClone(find('Service', 'coral-dns'));
    delete svc.spec.ports[0].port;
    expect(schemaErrors([{ where: 'svc', doc: svc }])[0]).toMatch(
      /ports\/0 must have required property '?port'?/,
    );
  });

  it('use no field the API does not know (strict field validation)', () => {
    expect(unknownFields(manifests)).toEqual([]);
    const typo = structuredClone(sts);
    typo.spec.template.spec.containers[0].readinesProbe =
      typo.spec.template.spec.containers[0].readinessProbe;
    expect(unknownFields([{ where: 'typo', doc: typo }]).join('\n')).toMatch(
      /readinesProbe\W+ does not exist in type 'IContainer'/,
    );
  }, 60_000);

  it('are all applied by the kustomization, whose generated Secret the pods use', () => {
    const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
    const generator = (kustomization.secretGenerator as Obj[]).find(
      (g) => g.name === 'coral-secrets',
    )!;
    expect(generator.files).toEqual(['admin-token', 'fleet-keys']);
    // The Secret the generator makes from the token file.
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: generator.name, namespace: kustomization.namespace },
      type: generator.type,
      data: {
        'admin-token': Buffer.from('0123456789abcdef'.repeat(3)).toString('base64'),
        'fleet-keys': Buffer.from('ab'.repeat(32)).toString('base64'),
      },
    };
    expect(schemaErrors([{ where: 'generated Secret', doc: secret }])).toEqual([]);
    const refs = (container.env as Obj[]).flatMap((e) =>
      e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [],
    );
    expect(refs).toEqual([
      { name: 'coral-secrets', key: 'admin-token' },
      { name: 'coral-secrets', key: 'fleet-keys' },
    ]);
    // The token and key files themselves are never committed.
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toMatch(/^admin-token$/m);
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toMatch(/^fleet-keys$/m);
    expect(find('Namespace').metadata.name).toBe(kustomization.namespace);
    expect((kustomization.images as Obj[]).map((i) => i.name)).toContain(container.image);
  });

  it('fit together: selectors, named ports and protocols, probes, volumes, annotations', () => {
    const labels = pod.metadata.labels as Record<string, string>;
    const within = (sel: Record<string, string>) =>
      Object.entries(sel).every(([k, v]) => labels[k] === v);
    expect(within(sts.spec.selector.matchLabels)).toBe(true);
    expect(within(find('PodDisruptionBudget').spec.selector.matchLabels)).toBe(true);
    const services = manifests.filter((m) => m.doc.kind === 'Service').map((m) => m.doc);
    expect(services.map((s) => s.metadata.name).sort()).toEqual([
      'coral-dns',
      'coral-peers',
      'coral-proxy',
    ]);
    for (const svc of services) {
      expect(within(svc.spec.selector), svc.metadata.name).toBe(true);
      for (const p of svc.spec.ports as Obj[]) {
        const target = portNamed(p.targetPort);
        expect(target, `${svc.metadata.name} → ${p.targetPort}`).toBeDefined();
        expect(target!.protocol, `${svc.metadata.name} → ${p.targetPort}`).toBe(p.protocol);
      }
    }
    // The headless Service names the pods for the bootstrap list, ready or not.
    const peers = find('Service', sts.spec.serviceName);
    expect(peers.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    // DNS over UDP and TCP.
    expect(
      find('Service', 'coral-dns').spec.ports.map((p: Obj) => `${p.port}/${p.protocol}`),
    ).toEqual(['53/UDP', '53/TCP']);

    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'admin' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' });
    // A node that exits (status 1 on a fatal error) or stops answering is restarted.
    expect(pod.spec.restartPolicy ?? 'Always').toBe('Always');
    expect(pod.spec.restartPolicy).toBe('Always');
    expect(portNamed('admin')).toBeDefined();

    // Non-root, read-only root file system; writable: the data volume and a tmp emptyDir.
    expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    const claims = (sts.spec.volumeClaimTemplates as Obj[]).map((c) => c.metadata.name);
    const volumes = new Map((pod.spec.volumes as Obj[]).map((v) => [v.name, v]));
    for (const mount of container.volumeMounts as Obj[]) {
      expect(claims.includes(mount.name) || volumes.has(mount.name), mount.name).toBe(true);
    }
    const writable = (container.volumeMounts as Obj[])
      .filter((m) => !m.readOnly)
      .map((m) => m.mountPath);
    expect(writable.sort()).toEqual(['/data', '/tmp']);
    expect(volumes.get('tmp')).toHaveProperty('emptyDir');
    expect(claims).toEqual(['data']);
    expect(find('ConfigMap', volumes.get('config')!.configMap.name)).toBeDefined();

    expect(pod.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(portNamed('admin')!.containerPort),
      'prometheus.io/path': '/metrics',
    });
  });

  it('give the node a configuration its own schema accepts, agreeing with the manifests', async () => {
    const { config, podIp, token, fleetKey } = await podConfig(sts);
    expect(config.advertise).toBe(podIp);
    expect(config.admin.token).toBe(token);
    // Keyed: the pods have a bootstrap list, so they need the key, and get it from the Secret.
    expect(config.fleet).toMatchObject({ keys: [fleetKey], open: false });
    expect(config.dataDir).toBe('/data');
    expect(config.admin.publicMetrics).toBe(true);
    for (const [host] of [[config.host], [config.dns.host], [config.admin.host]])
      expect(host).toBe('0.0.0.0');
    expect(portNamed('proxy')!.containerPort).toBe(config.proxy.port);
    expect(portNamed('proxy-tls')!.containerPort).toBe(config.proxy.tlsPort);
    expect(config.tls.localCa).toBe(true);
    expect(portNamed('dsht')!.containerPort).toBe(config.dsht.port);
    expect(portNamed('dns-udp')!.containerPort).toBe(config.dns.port);
    expect(portNamed('dns-tcp')!.containerPort).toBe(config.dns.port);
    expect(portNamed('admin')!.containerPort).toBe(config.admin.port);
    // The seeds are pods of this StatefulSet under its headless Service, at the DSHT port.
    expect(config.bootstrap.length).toBeGreaterThan(0);
    for (const entry of config.bootstrap) {
      const m = /^(.+)-(\d+)\.(.+):(\d+)$/.exec(entry);
      expect(m, entry).not.toBeNull();
      expect(m![1]).toBe(sts.metadata.name);
      expect(Number(m![2])).toBeLessThan(sts.spec.replicas);
      expect(m![3]).toBe(sts.spec.serviceName);
      expect(Number(m![4])).toBe(config.dsht.port);
    }
    // The cache fits its volume.
    const gi = Number(
      /^(\d+)Gi$/.exec(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage)![1],
    );
    expect(config.proxy.diskBudgetBytes).toBeLessThan(gi * 2 ** 30);
  });
  it('have a tls component that mounts the coral-tls Secret as the certificate every pod serves', async () => {
    const component = parse(readFileSync(join(dir, 'tls/kustomization.yaml'), 'utf8')) as Obj;
    expect(component.kind).toBe('Component');
    const [patch] = component.patches as Obj[];
    expect(patch!.target).toMatchObject({ kind: 'StatefulSet', name: sts.metadata.name });
    // Apply its JSON patch (RFC 6902 `add` operations only) to the StatefulSet.
    const ops = parse(patch!.patch as string) as Obj[];
    const patched = structuredClone(sts);
    for (const op of ops) {
      expect(op.op).toBe('add');
      const keys = (op.path as string).split('/').slice(1);
      const last = keys.pop()!;
      let at: Obj = patched;
      for (const k of keys) at = at[k];
      expect(at, op.path).toBeDefined();
      if (last === '-') at.push(op.value);
      else at[last] = op.value;
    }
    expect(schemaErrors([{ where: 'tls component', doc: patched }])).toEqual([]);
    const c = patched.spec.template.spec.containers[0] as Obj;
    const mount = (c.volumeMounts as Obj[]).find((m) => m.name === 'tls')!;
    const volume = (patched.spec.template.spec.volumes as Obj[]).find((v) => v.name === 'tls')!;
    expect(volume.secret.secretName).toBe('coral-tls');
    const { config } = await podConfig(patched);
    // A kubernetes.io/tls Secret holds tls.crt and tls.key.
    expect(config.tls.cert).toBe(`${mount.mountPath}/tls.crt`);
    expect(config.tls.key).toBe(`${mount.mountPath}/tls.key`);
  });
});
