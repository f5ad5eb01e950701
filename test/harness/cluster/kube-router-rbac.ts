/**
 * The ClusterRole kube-router v2.1.0 ships (daemonset/generic-kuberouter.yaml),
 * bound to the user its static token names: it reads pods, namespaces and
 * NetworkPolicies and nothing more is needed for the firewall alone.
 */
export function kubeRouterRbac(user: string): object {
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'kube-router' },
        rules: [
          { apiGroups: [''], resources: ['namespaces', 'pods', 'services', 'nodes', 'endpoints'], verbs: ['list', 'get', 'watch'] },
          { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['list', 'get', 'watch'] },
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
          { apiGroups: [''], resources: ['services/status'], verbs: ['update'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'kube-router' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kube-router' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    ],
  }
}
