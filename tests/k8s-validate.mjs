// SPDX-License-Identifier: MIT
// k8s-validate.mjs - checks Kubernetes manifests offline, for
// tests/test_kubernetes.sh.
//
//   node k8s-validate.mjs MODULES FILE.yaml [DECODED.json]
//       Every object in FILE against the API's schema (npm's
//       kubernetes-models, found with js-yaml in the node_modules
//       directory MODULES).  DECODED is kubectl's typed decoding of FILE
//       (kubectl set env --local -o json, which adds a variable): a field FILE has and DECODED
//       lacks is unknown to the API, a typo that the schemas, which allow
//       any extra field, let through.
//   node k8s-validate.mjs MODULES --hotmap DAEMONSET.yaml POD.yaml
//       That the DaemonSet and the example pod agree (socket directory,
//       data path, socket group, daemon uid) and keep the security
//       settings contrib/kubernetes/README.md promises.
//
// Prints one line per problem and exits 1 if there is any, 0 otherwise;
// 2 when it cannot run (no modules).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [modules, ...args] = process.argv.slice(2);
if (!modules || args.length === 0) {
	console.error("usage: k8s-validate.mjs MODULES FILE.yaml [DECODED.json] | --hotmap DS.yaml POD.yaml");
	process.exit(2);
}
// the modules live outside the source tree: resolve from there
const require = createRequire(path.resolve(modules) + path.sep);
let yaml;
try {
	yaml = require("js-yaml");
	require.resolve("kubernetes-models/v1/Pod");
} catch (e) {
	console.error(`k8s-validate: js-yaml or kubernetes-models not in ${modules}: ${e.message}`);
	process.exit(2);
}

const problems = [];
const problem = (where, what) => problems.push(`${where}: ${what}`);

function load(file) {
	return yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d != null);
}

function name(doc) {
	return `${doc?.kind ?? "?"}/${doc?.metadata?.name ?? "?"}`;
}

function validate(file, doc) {
	const where = `${file}: ${name(doc)}`;
	if (typeof doc !== "object" || typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") {
		problem(where, "not an object with apiVersion and kind");
		return;
	}
	// apps/v1 DaemonSet -> kubernetes-models/apps/v1/DaemonSet
	const mod = `kubernetes-models/${doc.apiVersion}/${doc.kind}`;
	let Model;
	try {
		Model = require(mod)[doc.kind];
	} catch {
		problem(where, `no such kind in the API: ${doc.apiVersion} ${doc.kind}`);
		return;
	}
	try {
		new Model(doc).validate();
	} catch (e) {
		problem(where, e.message);
	}
}

// Go's omitempty drops zero values: their absence from DECODED says nothing.
function zero(v) {
	return v === null || v === false || v === 0 || v === "" ||
		(Array.isArray(v) && v.length === 0) ||
		(typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0);
}

function unknownFields(where, mine, theirs, at) {
	if (Array.isArray(mine)) {
		mine.forEach((v, i) => unknownFields(where, v, Array.isArray(theirs) ? theirs[i] : undefined, `${at}[${i}]`));
		return;
	}
	if (mine === null || typeof mine !== "object")
		return;
	for (const [k, v] of Object.entries(mine)) {
		const sub = at ? `${at}.${k}` : k;
		if (theirs === null || typeof theirs !== "object" || !(k in theirs)) {
			if (!zero(v))
				problem(where, `unknown field ${sub}`);
			continue;
		}
		unknownFields(where, v, theirs[k], sub);
	}
}

function checkFile(file, decodedFile) {
	let docs;
	try {
		docs = load(file);
	} catch (e) {
		problem(file, `not YAML: ${e.message}`);
		return;
	}
	if (docs.length === 0)
		problem(file, "no object");
	docs.forEach((doc) => validate(file, doc));
	if (decodedFile) {
		let decoded;
		try {
			decoded = JSON.parse(fs.readFileSync(decodedFile, "utf8"));
		} catch (e) {
			problem(file, `kubectl's decoding ${decodedFile} is not JSON: ${e.message}`);
			return;
		}
		const items = decoded.kind === "List" ? decoded.items : [decoded];
		if (items.length !== docs.length)
			problem(file, `kubectl decoded ${items.length} objects, the file has ${docs.length}`);
		docs.forEach((doc, i) => unknownFields(`${file}: ${name(doc)}`, doc, items[i], ""));
	}
}

// --- what the hotmap manifests promise ---------------------------------------------

function argAfter(argv, opt) {
	const i = argv.indexOf(opt);
	return i >= 0 ? argv[i + 1] : undefined;
}

function hostPathAt(spec, container, mountPath) {
	const m = (container.volumeMounts ?? []).find((vm) => vm.mountPath === mountPath);
	const v = m && (spec.volumes ?? []).find((vol) => vol.name === m.name);
	return { mount: m, hostPath: v?.hostPath?.path };
}

function checkLocked(where, spec, c) {
	const sc = c.securityContext ?? {};
	if (sc.allowPrivilegeEscalation !== false)
		problem(where, `${c.name}: allowPrivilegeEscalation is not false`);
	if (sc.readOnlyRootFilesystem !== true)
		problem(where, `${c.name}: readOnlyRootFilesystem is not true`);
	if (!(sc.capabilities?.drop ?? []).includes("ALL"))
		problem(where, `${c.name}: capabilities are not all dropped`);
	if (sc.privileged === true)
		problem(where, `${c.name}: privileged`);
	if (!c.resources?.requests || !c.resources?.limits?.memory)
		problem(where, `${c.name}: no resource requests or memory limit`);
}

function checkHotmap(dsFile, podFile) {
	const ds = load(dsFile).find((d) => d.kind === "DaemonSet");
	const pod = load(podFile).find((d) => d.kind === "Pod");
	if (!ds || !pod) {
		problem(dsFile, "no DaemonSet, or no Pod in " + podFile);
		return;
	}
	const dspec = ds.spec.template.spec, pspec = pod.spec;
	const d = dspec.containers.find((c) => (c.args ?? c.command ?? []).includes("hotmapd"));
	if (!d) {
		problem(dsFile, "no container runs hotmapd");
		return;
	}
	const argv = [...(d.command ?? []), ...(d.args ?? [])];
	const sock = argAfter(argv, "--socket"), root = argAfter(argv, "--root");
	const group = Number(argAfter(argv, "--socket-group"));
	if (!sock || !root || !group)
		problem(dsFile, "hotmapd without --socket, --root or --socket-group");
	const sockDir = path.posix.dirname(sock ?? "");
	const dSock = hostPathAt(dspec, d, sockDir), pc = pspec.containers[0];
	const pSock = hostPathAt(pspec, pc, sockDir);
	if (!dSock.hostPath || dSock.hostPath !== pSock.hostPath)
		problem(podFile, `the socket directory ${sockDir} is not the DaemonSet's hostPath`);
	if (pSock.mount && pSock.mount.readOnly !== true)
		problem(podFile, "the socket directory is mounted writable");
	const dData = hostPathAt(dspec, d, root), pData = hostPathAt(pspec, pc, root);
	if (!dData.hostPath || dData.hostPath !== pData.hostPath)
		problem(podFile, `the data ${root} is not the DaemonSet's hostPath at the same path`);
	for (const [f, m] of [[dsFile, dData.mount], [podFile, pData.mount]])
		if (m && m.readOnly !== true)
			problem(f, `the data ${root} is mounted writable`);
	const env = (c, k) => (c.env ?? []).find((e) => e.name === k)?.value;
	if (env(pc, "HOTMAP_SOCKET") !== sock)
		problem(podFile, `HOTMAP_SOCKET is not ${sock}`);
	const uid = d.securityContext?.runAsUser ?? dspec.securityContext?.runAsUser;
	if (!uid || env(pc, "HOTMAP_DAEMON_USER") !== String(uid))
		problem(podFile, `HOTMAP_DAEMON_USER is not hotmapd's uid ${uid}`);
	if (!(pspec.securityContext?.supplementalGroups ?? []).includes(group))
		problem(podFile, `supplementalGroups lack the socket's group ${group}`);
	for (const probe of ["readinessProbe", "livenessProbe"])
		if ((d[probe]?.exec?.command ?? []).join(" ") !== "hotmapctl ping")
			problem(dsFile, `${probe} is not hotmapctl ping`);
	if (dspec.securityContext?.runAsNonRoot !== true || pspec.securityContext?.runAsNonRoot !== true)
		problem(dsFile, "hotmapd or the pod may run as root");
	for (const c of [...(dspec.initContainers ?? []), ...dspec.containers])
		checkLocked(dsFile, dspec, c);
	for (const c of pspec.containers)
		checkLocked(podFile, pspec, c);
}

if (args[0] === "--hotmap")
	checkHotmap(args[1], args[2]);
else
	checkFile(args[0], args[1]);
for (const p of problems)
	console.log(p);
process.exit(problems.length > 0 ? 1 : 0);
