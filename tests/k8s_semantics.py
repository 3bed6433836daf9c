"""Rules the Kubernetes API server (or the cluster at run time) enforces
beyond the OpenAPI schemas that kubernetes-validate checks, plus this
project's own agreements, over the manifests given on the command line.

usage: k8s_semantics.py IMAGE FILE...   (prints one line per problem; exit 1)
Needs PyYAML (a dependency of kubernetes-validate, so in its venv).
"""
import re
import sys
import tomllib

import yaml

problems = []


def bad(where, msg):
    problems.append(f"{where}: {msg}")


def pod_spec(doc):
    kind = doc.get("kind")
    if kind in ("DaemonSet", "Deployment", "StatefulSet", "Job"):
        return doc["spec"]["template"]["spec"]
    return None


def check_pod(where, doc, spec, image):
    host_network = spec.get("hostNetwork", False)
    for c in spec.get("containers", []):
        cw = f"{where} container {c['name']}"
        sc = c.get("securityContext", {}) or {}
        privileged = sc.get("privileged", False)
        # API: Bidirectional propagation only for privileged containers.
        for m in c.get("volumeMounts", []):
            if m.get("mountPropagation") == "Bidirectional" and not privileged:
                bad(cw, f"mountPropagation Bidirectional on {m['mountPath']} needs privileged: true")
        # API: with hostNetwork, hostPort must equal containerPort.
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        for p in c.get("ports", []):
            if host_network and "hostPort" in p and p["hostPort"] != p["containerPort"]:
                bad(cw, "hostNetwork needs hostPort == containerPort")
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            pr = c.get(probe)
            if not pr or "httpGet" not in pr:
                continue
            port = pr["httpGet"]["port"]
            if isinstance(port, str) and port not in ports:
                bad(cw, f"{probe} names port {port!r}, which the container does not declare")
            # Readiness fails on what a restart cannot fix (an ABI
            # mismatch): /readyz; liveness and startup only ask whether the
            # process serves: /healthz.
            want = "/readyz" if probe == "readinessProbe" else "/healthz"
            if pr["httpGet"].get("path") != want:
                bad(cw, f"{probe} must probe the daemon's {want}")
        # $(VAR) in args expands only for variables of the container's env.
        env = {e["name"] for e in c.get("env", [])}
        for a in c.get("args", []) + c.get("command", []):
            for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a):
                if var not in env:
                    bad(cw, f"args use $({var}) but env does not define it")
        if c.get("image") != image:
            bad(cw, f"image {c.get('image')!r} is not the one `cargo xtask image` builds ({image})")
        # The entrypoint is rttfairctl; the image's only shell (dash, for
        # the lab) is no interface: commands must be rttfairctl's.
        if c.get("command"):
            bad(cw, "use args, not command (the entrypoint is rttfairctl)")


def check_daemonset(where, spec):
    c = spec["containers"][0]
    sc = c.get("securityContext", {})
    if sc.get("privileged"):
        bad(where, "the daemon must not be privileged")
    caps = sc.get("capabilities", {})
    if sorted(caps.get("add", [])) != ["BPF", "PERFMON"] or caps.get("drop") != ["ALL"]:
        bad(where, "the daemon gets exactly CAP_BPF + CAP_PERFMON (loader::preflight), all else dropped")
    for probe in ("readinessProbe", "livenessProbe"):
        if probe not in c:
            bad(where, f"no {probe}")
    if "requests" not in c.get("resources", {}):
        bad(where, "no resource requests")
    if not spec.get("hostNetwork"):
        bad(where, "hostNetwork: native_flows reads the node's sockets")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    if "/sys/fs/bpf" not in mounts:
        bad(where, "no bpffs mount at /sys/fs/bpf")
    # It pins under /sys/fs/bpf, which the runtimes' default AppArmor
    # profile denies to an unprivileged container.
    if (sc.get("appArmorProfile") or {}).get("type") != "Unconfined":
        bad(where, "AppArmor must be Unconfined: the default profile denies pinning in /sys/fs/bpf")
    for t in spec.get("tolerations") or []:
        if t.get("operator") == "Exists" and not t.get("key"):
            bad(where, "tolerates every taint; name the taints it should ride out")
    aff = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = (aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms", [])
    if not terms:
        bad(where, "no required node affinity (arch, kernel version)")
    for t in terms:
        keys = {e["key"]: e for e in t.get("matchExpressions", [])}
        arch = keys.get("kubernetes.io/arch")
        if not arch or arch.get("operator") != "In" or arch.get("values") != ["amd64"]:
            bad(where, "every node term must select kubernetes.io/arch In [amd64] (the image's architecture)")
        if "feature.node.kubernetes.io/kernel-version.major" not in keys:
            bad(where, "every node term must select a kernel version (feature.node.kubernetes.io/kernel-version.*)")


def check_peer_hash_key(where, spec, docs):
    """The daemon's peer_hash_key_file (in its ConfigMap's daemon.toml)
    must come from a Secret volume the container mounts; if that Secret is
    optional (the pod starts without it), the config must say the key file
    may be absent, or the daemon refuses to start exactly then."""
    c = spec["containers"][0]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        cm = (volumes.get(m["name"]) or {}).get("configMap")
        if not cm:
            continue
        for _, d in docs:
            if d.get("kind") != "ConfigMap" or d["metadata"]["name"] != cm["name"]:
                continue
            toml = tomllib.loads((d.get("data") or {}).get("daemon.toml", ""))
            key = toml.get("peer_hash_key_file")
            if key is None:
                continue
            mount = next((k for k in c.get("volumeMounts", [])
                          if key.startswith(k["mountPath"].rstrip("/") + "/")), None)
            secret = (volumes.get(mount["name"]) or {}).get("secret") if mount else None
            if not secret:
                bad(where, f"peer_hash_key_file {key} is not in a mounted Secret volume")
            elif secret.get("optional") and not toml.get("peer_hash_key_optional"):
                bad(where, f"the Secret of peer_hash_key_file {key} is optional but "
                           "peer_hash_key_optional is not true: no Secret, no daemon")


def check_rollout(where, doc):
    """A pod restart does not touch traffic, so a rollout must not be one
    node at a time (14-28 h on 5,000 nodes): maxUnavailable a percentage."""
    ru = ((doc["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {})
    mu = ru.get("maxUnavailable", 1)
    if not (isinstance(mu, str) and mu.endswith("%")):
        bad(where, f"rollingUpdate maxUnavailable {mu!r} replaces a fixed number of nodes at a time; use a percentage")


def check_sweep(where, doc, merge_args):
    spec = doc["spec"]
    if spec.get("completionMode") != "Indexed":
        bad(where, "the sweep Job must be Indexed")
    n = spec.get("completions")
    if spec.get("parallelism") != n:
        bad(where, "parallelism must equal completions (one shard per node at once)")
    args = spec["template"]["spec"]["containers"][0]["args"]
    shard = args[args.index("--shard") + 1] if "--shard" in args else ""
    if shard != f"$(JOB_COMPLETION_INDEX)/{n}":
        bad(where, f"--shard {shard!r} does not match completions {n}")
    out = args[args.index("--out") + 1] if "--out" in args else ""
    if "$(JOB_COMPLETION_INDEX)" not in out:
        bad(where, "each shard needs its own --out folder")
    aff = spec["template"]["spec"].get("affinity", {}).get("podAntiAffinity", {})
    terms = aff.get("requiredDuringSchedulingIgnoredDuringExecution", [])
    labels = spec["template"]["metadata"].get("labels", {})
    if not any(
        t.get("topologyKey") == "kubernetes.io/hostname"
        and all(labels.get(k) == v for k, v in t["labelSelector"]["matchLabels"].items())
        for t in terms
    ):
        bad(where, "shards must run on distinct nodes (required podAntiAffinity on hostname)")
    if not spec["template"]["spec"]["containers"][0].get("securityContext", {}).get("privileged"):
        bad(where, "a lab shard must be privileged (netns, TUN, HTB, CCAs)")
    if merge_args is not None:
        shards = [a for a in merge_args if a.startswith("/results/shard-")]
        want = [out.replace("$(JOB_COMPLETION_INDEX)", str(i)) for i in range(n or 0)]
        if shards != want:
            bad(where, f"the merge Job merges {shards}, the sweep writes {want}")


CRITICAL = ("system-node-critical", "system-cluster-critical")


def check_priority_quota(where, doc, spec, docs):
    """Clusters that limit priority class consumption (GKE by default)
    admit a pod of a system-*-critical class outside kube-system only into a
    namespace with a ResourceQuota whose scopeSelector names that class."""
    cls = spec.get("priorityClassName")
    ns = doc["metadata"].get("namespace", "default")
    if cls not in CRITICAL or ns == "kube-system":
        return
    for _, q in docs:
        if q.get("kind") != "ResourceQuota" or q["metadata"].get("namespace", "default") != ns:
            continue
        for e in (q["spec"].get("scopeSelector") or {}).get("matchExpressions", []):
            if e.get("scopeName") == "PriorityClass" and e.get("operator") == "In" and cls in e.get("values", []):
                return
    bad(where, f"priorityClassName {cls} in namespace {ns} needs a ResourceQuota there scoped to PriorityClass In [{cls}]")


def excludes(term, key, value):
    """Whether a nodeSelectorTerm keeps off nodes labelled key=value."""
    for e in term.get("matchExpressions", []):
        if e.get("key") != key:
            continue
        if e.get("operator") == "DoesNotExist":
            return True
        if e.get("operator") == "NotIn" and value in e.get("values", []):
            return True
    return False


def check_lab_pool(where, sweep, daemonsets):
    """The sweep runs on a labelled lab pool, and every DaemonSet of the
    project keeps off it: its CCAs would be what the lab measures."""
    selector = sweep["spec"]["template"]["spec"].get("nodeSelector") or {}
    if not selector:
        bad(where, "the sweep Job must select the lab pool (nodeSelector)")
    for dwhere, ds in daemonsets:
        aff = (ds["spec"]["template"]["spec"].get("affinity") or {}).get("nodeAffinity") or {}
        terms = (aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms", [])
        # The Job needs every label of its selector, so a term keeps off
        # the pool if it excludes any one of them (kubernetes.io/arch is in
        # the selector too, and the DaemonSet wants that one).
        pool = ", ".join(f"{k}={v}" for k, v in selector.items())
        if not terms or not all(any(excludes(t, k, v) for k, v in selector.items()) for t in terms):
            bad(dwhere, f"runs on the lab pool ({pool}): needs a required nodeAffinity excluding it")


def main():
    image, files = sys.argv[1], sys.argv[2:]
    docs = []
    for f in files:
        with open(f) as fh:
            for i, d in enumerate(yaml.safe_load_all(fh)):
                if d:
                    docs.append((f"{f}[{i}] {d.get('kind')}/{d['metadata']['name']}", d))
    merge_args = None
    for where, d in docs:
        if d.get("kind") == "Job" and d["spec"].get("completionMode") != "Indexed":
            merge_args = d["spec"]["template"]["spec"]["containers"][0]["args"]
    for where, d in docs:
        spec = pod_spec(d)
        if spec is None:
            continue
        check_pod(where, d, spec, image)
        check_priority_quota(where, d, spec, docs)
        if d["kind"] == "DaemonSet":
            check_daemonset(where, spec)
            check_rollout(where, d)
            check_peer_hash_key(where, spec, docs)
        if d["kind"] == "Job" and d["spec"].get("completionMode") == "Indexed":
            check_sweep(where, d, merge_args)
            check_lab_pool(where, d, [(w, x) for w, x in docs if x.get("kind") == "DaemonSet"])
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


main()
