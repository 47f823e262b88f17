/**
 * The Kubernetes deployment (deploy/kubernetes and the Helm chart deploy/helm/openwop-host), checked
 * without a cluster, the helm binary or the network:
 * - every object validates against the Kubernetes API schema of its kind (the validators the
 *   kubernetes-models package compiles with ajv from the Kubernetes 1.33 OpenAPI definitions, and for
 *   the ServiceMonitor from the Prometheus Operator CRD's openAPIV3Schema), and carries no field its
 *   kind does not define (TypeScript's excess-property check against the same packages' types:
 *   the schemas themselves let unknown fields through);
 * - the chart, rendered by the test renderer of the template subset it keeps to (helm-template.ts),
 *   yields with its default values exactly the objects of the plain manifests (Helm's own labels and
 *   hook annotations aside), and the optional objects once switched on;
 * - the pieces fit the host: probes on /healthz and /readyz, the migration Job as a pre-install and
 *   pre-upgrade hook, selectors that match the pods they mean, settings the host knows.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import * as YAML from 'yaml';
import { ENV_SETTINGS } from '../../src/platform/config/host-config';
import { HelmTemplates, renderChart as renderTemplates } from './helm-template';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const root = path.join(__dirname, '..', '..');
const chartDir = path.join(root, 'deploy', 'helm', 'openwop-host');
const plainDir = path.join(root, 'deploy', 'kubernetes');
const RELEASE = { name: 'openwop-host', namespace: 'openwop' };

/** apiVersion/kind -> [module, model class / interface name]. */
const KINDS: Record<string, [string, string]> = {
  'v1/ConfigMap': ['kubernetes-models/v1/ConfigMap', 'ConfigMap'],
  'v1/Secret': ['kubernetes-models/v1/Secret', 'Secret'],
  'v1/Service': ['kubernetes-models/v1/Service', 'Service'],
  'v1/ServiceAccount': ['kubernetes-models/v1/ServiceAccount', 'ServiceAccount'],
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'Deployment'],
  'batch/v1/Job': ['kubernetes-models/batch/v1/Job', 'Job'],
  'autoscaling/v2/HorizontalPodAutoscaler': ['kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', 'HorizontalPodAutoscaler'],
  'policy/v1/PodDisruptionBudget': ['kubernetes-models/policy/v1/PodDisruptionBudget', 'PodDisruptionBudget'],
  'networking.k8s.io/v1/Ingress': ['kubernetes-models/networking.k8s.io/v1/Ingress', 'Ingress'],
  'monitoring.coreos.com/v1/ServiceMonitor': ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', 'ServiceMonitor'],
};

/** The chart rendered as `helm template` would, its objects loosely typed for the assertions. */
function renderChart(...args: Parameters<typeof renderTemplates>): { objects: Obj[]; notes: string } {
  const r = renderTemplates(...args);
  return { objects: r.objects as Obj[], notes: r.notes };
}

const kindOf = (o: Obj) => `${o.apiVersion}/${o.kind}`;
const idOf = (o: Obj) => `${o.kind}/${o.metadata?.name}`;

function readObjects(file: string): Obj[] {
  return YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((d) => {
      if (d.errors.length) throw new Error(`${file}: ${d.errors[0].message}`);
      return d.toJS() as Obj | null;
    })
    .filter((o): o is Obj => !!o);
}

const kustomization = YAML.parse(fs.readFileSync(path.join(plainDir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
const plain = kustomization.resources.flatMap((f) => readObjects(path.join(plainDir, f)));
const optional = ['optional/servicemonitor.yaml', 'optional/ingress.yaml'].flatMap((f) => readObjects(path.join(plainDir, f)));
const secretExample = readObjects(path.join(plainDir, 'secret.example.yaml'));

/** Every problem the kind's schema finds in the object (empty when it validates). */
function schemaErrors(o: Obj): string[] {
  const entry = KINDS[kindOf(o)];
  if (!entry) return [`${idOf(o)}: no schema for ${kindOf(o)}`];
  const Model = (require(entry[0]) as Record<string, new (data: Obj) => { validate(): void }>)[entry[1]]; // eslint-disable-line @typescript-eslint/no-require-imports
  try {
    new Model(o).validate();
    return [];
  } catch (e) {
    return [`${idOf(o)}: ${(e as Error).message}`];
  }
}

/**
 * Fields the kind's type does not define, wrong value types included: TypeScript's check of each
 * object as a literal of its kind. One program for all the objects of the file (a few seconds), each
 * named by its label in the answer.
 */
function fieldErrors(objects: Array<[string, Obj]>): string[] {
  const file = path.join(root, 'test', 'deploy', '__manifest-check__.ts');
  const lines: string[] = [];
  const at: string[] = [];
  objects.forEach(([label, o], i) => {
    const entry = KINDS[kindOf(o)];
    if (!entry) return;
    at.push(label, label);
    lines.push(`import type { I${entry[1]} as T${i} } from '${entry[0]}';`, `export const o${i}: T${i} = ${JSON.stringify(o)};`);
  });
  const source = lines.join('\n');
  const host = ts.createCompilerHost({});
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.readFile = (f) => (path.resolve(f) === file ? source : readFile(f));
  host.fileExists = (f) => path.resolve(f) === file || fileExists(f);
  const program = ts.createProgram([file], { strict: true, noEmit: true, skipLibCheck: true, types: [], lib: ['lib.es2022.d.ts'], module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10 }, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    return `${at[line] ?? '?'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ').slice(0, 400)}`;
  });
}

/** An object as kubectl would apply it from the plain manifests: Helm's own labels and annotations removed. */
function normalise(o: Obj): Obj {
  const copy = JSON.parse(JSON.stringify(o)) as Obj;
  const labels = copy.metadata?.labels as Record<string, string> | undefined;
  if (labels) for (const k of ['helm.sh/chart', 'app.kubernetes.io/managed-by']) delete labels[k];
  const ann = copy.metadata?.annotations as Record<string, string> | undefined;
  if (ann) {
    for (const k of Object.keys(ann)) if (k.startsWith('helm.sh/')) delete ann[k];
    if (!Object.keys(ann).length) delete copy.metadata.annotations;
  }
  return copy;
}

const byId = (objs: Obj[]) => Object.fromEntries(objs.map((o) => [idOf(o), normalise(o)]));

const ALL_ON = {
  secret: { create: true, databaseUrl: 'postgres://openwop:pw@db:5432/openwop', credentialKeys: 'k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', extra: { OPENWOP_INTERRUPT_TOKEN_SECRET: 'x'.repeat(32) } },
  serviceMonitor: { enabled: true, labels: { release: 'prometheus' } },
  ingress: { enabled: true, className: 'nginx', annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600' }, tls: { enabled: true } },
  autoscaling: { enabled: false },
  replicaCount: 3,
  serviceAccount: { create: false, name: 'openwop' },
  imagePullSecrets: [{ name: 'registry' }],
  podAnnotations: { 'example.com/team': 'platform' },
  podLabels: { tier: 'backend' },
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'openwop', effect: 'NoSchedule' }],
  topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'openwop-host' } } }],
  image: { repository: 'registry.example.com/openwop-host', tag: '0.1.0-rc.1' },
};

describe('Kubernetes deployment', () => {
  const chartDefault = renderChart(chartDir, {}, RELEASE);
  const chartAllOn = renderChart(chartDir, ALL_ON, { ...RELEASE, isUpgrade: true });
  const deployment = plain.find((o) => o.kind === 'Deployment')!;
  const typo = JSON.parse(JSON.stringify(deployment)) as Obj;
  typo.spec.template.spec.containers[0].readinesProbe = typo.spec.template.spec.containers[0].readinessProbe;
  const monitor = JSON.parse(JSON.stringify(optional.find((o) => o.kind === 'ServiceMonitor'))) as Obj;
  monitor.spec.endpoints[0].bearerTokenFile = 42;
  const label = (group: string, objs: Obj[]): Array<[string, Obj]> => objs.map((o) => [`${group} ${idOf(o)}`, o]);
  let fieldCheck: string[] = [];
  beforeAll(() => {
    fieldCheck = fieldErrors([
      ['broken typo', typo],
      ['broken monitor', monitor],
      ...label('plain', [...plain, ...optional, ...secretExample]),
      ...label('chart-default', chartDefault.objects),
      ...label('chart-all-on', chartAllOn.objects),
    ]);
  });
  const fieldErrorsOf = (group: string) => fieldCheck.filter((e) => e.startsWith(`${group} `));

  it('the schema and field checks are not vacuous: they refuse a broken object', () => {
    const broken = JSON.parse(JSON.stringify(deployment)) as Obj;
    delete broken.spec.template.spec.containers[0].name;
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
    expect(schemaErrors(broken)).toEqual(['Deployment/openwop-host: data/spec/template/spec/containers/0 must have required property name, data/spec/template/spec/containers/0/ports/0/containerPort must be integer']);
    expect(fieldErrorsOf('broken')).toEqual(["broken typo: Object literal may only specify known properties, and '\"readinesProbe\"' does not exist in type 'IContainer'.", expect.stringMatching(/^broken monitor: Type 'number' is not assignable to type 'string'/)]);
    expect(schemaErrors({ apiVersion: 'apps/v1beta1', kind: 'Deployment', metadata: { name: 'x' } })).toEqual(['Deployment/x: no schema for apps/v1beta1/Deployment']);
  });

  it('every plain manifest validates against its kind\'s schema and defines no unknown field', () => {
    const objects = [...plain, ...optional, ...secretExample];
    expect(objects.map(idOf).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Ingress', 'Job', 'PodDisruptionBudget', 'Secret', 'Service', 'ServiceAccount', 'ServiceMonitor'].map((k) => `${k}/openwop-host${k === 'Job' ? '-migrate' : ''}`).sort(),
    );
    expect(objects.flatMap(schemaErrors)).toEqual([]);
    expect(fieldErrorsOf('plain')).toEqual([]);
  });

  it('every chart object validates, with the default values and with every option on', () => {
    const objects = [...chartDefault.objects, ...chartAllOn.objects];
    expect(objects.flatMap(schemaErrors)).toEqual([]);
    expect([...fieldErrorsOf('chart-default'), ...fieldErrorsOf('chart-all-on')]).toEqual([]);
    expect(chartAllOn.objects.map(idOf).sort()).toEqual(['ConfigMap/openwop-host', 'Deployment/openwop-host', 'Ingress/openwop-host', 'Job/openwop-host-migrate', 'PodDisruptionBudget/openwop-host', 'Secret/openwop-host', 'Service/openwop-host', 'ServiceMonitor/openwop-host']);
  });

  it('the chart with its default values renders exactly the plain manifests', () => {
    expect(byId(chartDefault.objects)).toEqual(byId(plain));
    // Helm's labels are there, on every object.
    for (const o of chartDefault.objects) expect(o.metadata.labels).toMatchObject({ 'helm.sh/chart': 'openwop-host-0.1.0', 'app.kubernetes.io/managed-by': 'Helm' });
  });

  it('the optional objects, switched on with the values the plain files assume, equal the plain files', () => {
    const on = renderChart(chartDir, { serviceMonitor: { enabled: true }, ingress: { enabled: true } }, RELEASE);
    const extra = on.objects.filter((o) => ['ServiceMonitor', 'Ingress'].includes(o.kind));
    expect(byId(extra)).toEqual(byId(optional));
  });

  it('the replicas are probed on /healthz and /readyz, run the image as its node user and read their settings from the ConfigMap and the Secret', () => {
    const d = plain.find((o) => o.kind === 'Deployment')!;
    const pod = d.spec.template.spec;
    const c = pod.containers[0];
    expect([c.startupProbe.httpGet.path, c.readinessProbe.httpGet.path, c.livenessProbe.httpGet.path]).toEqual(['/healthz', '/readyz', '/healthz']);
    const portNames = c.ports.map((p: Obj) => p.name);
    for (const probe of [c.startupProbe, c.readinessProbe, c.livenessProbe]) expect(portNames).toContain(probe.httpGet.port);
    // /readyz answers within 1.5 s whatever the database does, inside the probe's timeout.
    expect(c.readinessProbe.timeoutSeconds).toBeGreaterThanOrEqual(2);
    const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain('USER node');
    expect(dockerfile).toContain('CMD ["node", "dist/src/main.js", "serve"]');
    expect(c.args).toEqual(['node', 'dist/src/main.js', 'serve']);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    const cm = plain.find((o) => o.kind === 'ConfigMap')!;
    expect(c.envFrom).toEqual([{ configMapRef: { name: cm.metadata.name } }, { secretRef: { name: 'openwop-host' } }]);
    expect(cm.data).toMatchObject({ OPENWOP_MIGRATE_ON_START: 'false', HOST: '0.0.0.0', PORT: String(c.ports[0].containerPort), OPENWOP_GRPC_PORT: String(c.ports[1].containerPort) });
    // Every setting the manifests give is one the host knows.
    const known = new Set(ENV_SETTINGS.map((s) => s.name));
    const given = [...Object.keys(cm.data), ...c.env.map((e: Obj) => e.name), ...Object.keys(secretExample[0].stringData), ...Object.keys(ALL_ON.secret.extra)];
    expect(given.filter((n) => !known.has(n))).toEqual([]);
  });

  it('the Service, the PodDisruptionBudget and the autoscaler select the replicas, never the migration pods', () => {
    const d = plain.find((o) => o.kind === 'Deployment')!;
    const job = plain.find((o) => o.kind === 'Job')!;
    const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    const podLabels = d.spec.template.metadata.labels;
    const jobLabels = job.spec.template.metadata.labels;
    const svc = plain.find((o) => o.kind === 'Service')!;
    const pdb = plain.find((o) => o.kind === 'PodDisruptionBudget')!;
    for (const selector of [svc.spec.selector, pdb.spec.selector.matchLabels, d.spec.selector.matchLabels]) {
      expect(matches(selector, podLabels)).toBe(true);
      expect(matches(selector, jobLabels)).toBe(false);
    }
    expect(svc.spec.ports.map((p: Obj) => p.targetPort)).toEqual(d.spec.template.spec.containers[0].ports.map((p: Obj) => p.name));
    const hpa = plain.find((o) => o.kind === 'HorizontalPodAutoscaler')!;
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: d.metadata.name });
    // The autoscaler owns the count: no replicas in the Deployment while it is on, replicaCount once it is off.
    expect(d.spec.replicas).toBeUndefined();
    expect(chartAllOn.objects.find((o) => o.kind === 'Deployment')!.spec.replicas).toBe(3);
  });

  it('the migration Job runs `migrate` with the database URL of the Secret, as a hook before install and upgrade', () => {
    const job = chartDefault.objects.find((o) => o.kind === 'Job')!;
    expect(job.metadata.annotations).toEqual({ 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-weight': '0', 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' });
    const c = job.spec.template.spec.containers[0];
    expect(c.args).toEqual(['node', 'dist/src/main.js', 'migrate']);
    expect(c.env).toContainEqual({ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'openwop-host', key: 'DATABASE_URL' } } });
    // A hook runs before the release's objects exist: it needs neither the ConfigMap nor the chart's service account.
    expect(JSON.stringify(job)).not.toContain('configMapRef');
    expect(job.spec.template.spec.serviceAccountName).toBeUndefined();
    // A Secret the chart writes is a hook too, written before the Job.
    const secret = chartAllOn.objects.find((o) => o.kind === 'Secret')!;
    expect(Number(secret.metadata.annotations['helm.sh/hook-weight'])).toBeLessThan(Number(job.metadata.annotations['helm.sh/hook-weight']));
    expect(Buffer.from(secret.data.DATABASE_URL, 'base64').toString()).toBe(ALL_ON.secret.databaseUrl);
    expect(Object.keys(secret.data).sort()).toEqual(['DATABASE_URL', 'OPENWOP_CREDENTIAL_KEYS', 'OPENWOP_INTERRUPT_TOKEN_SECRET']);
    expect(() => renderChart(chartDir, { secret: { create: true, credentialKeys: 'k1:x' } }, RELEASE)).toThrow('secret.databaseUrl is required with secret.create');
  });

  it('the chart, the plain manifests and the package name one release, and the kustomization lists every manifest', () => {
    const chart = YAML.parse(fs.readFileSync(path.join(chartDir, 'Chart.yaml'), 'utf8')) as Obj;
    const version = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'openwop-host', type: 'application', appVersion: version });
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    for (const o of [...plain, ...optional]) expect(o.metadata.labels['app.kubernetes.io/version']).toBe(version);
    for (const o of plain.filter((x) => x.spec?.template)) expect(o.spec.template.spec.containers[0].image).toBe(`openwop-host:${version}`);
    const files = fs.readdirSync(plainDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== 'secret.example.yaml');
    expect(files.sort()).toEqual([...kustomization.resources].sort());
    const text = fs.readFileSync(path.join(plainDir, 'kustomization.yaml'), 'utf8');
    for (const f of fs.readdirSync(path.join(plainDir, 'optional'))) expect(text).toContain(`# - optional/${f}`);
  });

  it('NOTES.txt renders the next steps with nothing left unrendered', () => {
    expect(chartDefault.notes).toContain('kubectl -n openwop exec deployment/openwop-host -- \\\n       node dist/src/main.js keys create --tenant default --principal admin --role admin');
    expect(chartDefault.notes).toContain('port-forward service/openwop-host 8080:8080');
    expect(chartAllOn.notes).toContain('https://openwop.example.com/.well-known/openwop');
    for (const n of [chartDefault.notes, chartAllOn.notes]) expect(n).not.toMatch(/\{\{|\}\}/);
  });

  it('the test renderer follows Go templates where the chart relies on them, and refuses what is outside the subset', () => {
    const t = new HelmTemplates({
      't.yaml': '{{- define "x" -}}[{{ . }}]{{- end -}}\na: {{ include "x" "v" }}\n{{- range $k, $v := .m }}\n{{ $k }}={{ $v | quote }}\n{{- end }}\n{{ if .no }}yes{{ else if .yes }}elif{{ else }}no{{ end }} {{ default "d" .none }} {{ .missing.deep }}|',
      'bad.yaml': '{{ tpl "x" . }}',
    });
    expect(t.render('t.yaml', { m: { b: 2, a: 'x' }, yes: true })).toBe('a: [v]\na="x"\nb="2"\nelif d |');
    expect(() => t.render('bad.yaml', {})).toThrow('function "tpl" is outside the chart\'s template subset');
    expect(() => new HelmTemplates({ 'w.yaml': '{{ with .m }}{{ end }}' })).toThrow('{{with}} is outside');
    expect(() => t.render('t.yaml', { m: { big: 2_000_000 } })).toThrow('1e+06');
  });
});
