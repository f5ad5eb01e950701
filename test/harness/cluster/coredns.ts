/**
 * CoreDNS as a pod, as clusters run it: Service `kube-dns` in kube-system and
 * pods labelled k8s-app=kube-dns, which NetworkPolicies (the chart's runner
 * policy among them) select. No `forward`: the test host has no upstream DNS
 * worth waiting for, so names outside the cluster fail at once.
 */
export function corednsManifests(image: string, dnsIp: string): object {
  const labels = { 'k8s-app': 'kube-dns' }
  const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loop
    reload
}
`
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: 'kube-system' } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'system:coredns' },
        rules: [
          { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'system:coredns' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
        subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
      },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'coredns', namespace: 'kube-system' }, data: { Corefile: corefile } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'coredns', namespace: 'kube-system', labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              serviceAccountName: 'coredns',
              dnsPolicy: 'Default',
              securityContext: {
                runAsNonRoot: true,
                runAsUser: 65532,
                runAsGroup: 65532,
                seccompProfile: { type: 'RuntimeDefault' },
                // Port 53 without NET_BIND_SERVICE: a namespaced, kubelet-safe sysctl.
                sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '53' }],
              },
              containers: [
                {
                  name: 'coredns',
                  image,
                  imagePullPolicy: 'IfNotPresent',
                  args: ['-conf', '/etc/coredns/Corefile'],
                  ports: [
                    { name: 'dns', containerPort: 53, protocol: 'UDP' },
                    { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                  ],
                  readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 1 },
                  livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                  securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                  resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
                  volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                },
              ],
              volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { ...labels, 'kubernetes.io/name': 'CoreDNS' } },
        spec: {
          selector: labels,
          clusterIP: dnsIp,
          ports: [
            { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
            { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
          ],
        },
      },
    ],
  }
}
